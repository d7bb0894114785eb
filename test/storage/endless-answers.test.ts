/**
 * Store answers that never end, announce more than an answer may hold, or trickle: a listing page, a Hub revision, an
 * error answer to a read. S3 (the AWS SDK), GCS (our requests), Azure Blob (the Azure SDK) and the Hub, each pointed
 * at a server on 127.0.0.1 that writes with backpressure and counts what the client's side took. Each answer is
 * bounded while it streams: the download fails `too-large` (or `timeout` for a trickle) having been sent at most the
 * cap and what the sockets' buffers hold, however fast the machine.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { defaultDownloadLimits, type DownloadLimits } from '../../src/storage/download-limits';
import { maxAnswerBytes } from '../../src/storage/store-answer';
import { effectError } from '../helpers/effect-error';
import { sendEndless, socketsHold, type EndlessRun } from '../helpers/endless-answer';
import { useHttpServers } from '../helpers/http-servers';
import { stores, type Route, type Store } from '../helpers/raw-stores';
import { useTempDir } from '../helpers/temp-dir';

jest.setTimeout(60_000);

const serve = useHttpServers();
const staging = useTempDir('endless-answers');
const never = new AbortController().signal;

/** How the endless request is answered: a body that never ends, one announcing a size over the cap, a trickle. */
type Shape = 'endless' | 'announced' | 'trickle';

/** Starts the store's server: `route` answered in `shape`, everything else as a good store would. */
const start = async (store: Store, route: Route, shape: Shape) => {
  const runs: EndlessRun[] = [];
  const server = await serve((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://store');
    if (store.routeOf(url) !== route) return store.good(url, response);
    const { type, ...pieces } = route === 'listing' ? store.listing : store.errorBody;
    runs.push(
      sendEndless(response, {
        status: route === 'listing' ? 200 : 403,
        headers: { 'content-type': type, ...(shape === 'announced' ? { 'content-length': 2 ** 40 } : {}) },
        ...pieces,
        ...(shape === 'trickle' ? { everyMs: 20 } : {}),
      }),
    );
  });
  return { server, served: () => runs.reduce((sum, run) => sum + run.served(), 0), runs };
};

// A trickle far below this rate: the download must end within a window or two of it.
const slowLimits: DownloadLimits = {
  ...defaultDownloadLimits,
  minRate: { bytesPerSecond: 256 * 1024, windowMs: 400 },
};

describe.each(Object.keys(stores))('a %s answer', (name) => {
  const store = stores[name]!;

  it('that never ends fails too-large naming the store, the request and the cap, sent no more than the cap', async () => {
    const { server, served } = await start(store, 'listing', 'endless');
    const error = await effectError(
      store.provider(server.url, defaultDownloadLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toContain('16 MiB');
    expect(error.message).toContain(`GET ${server.url}/`);
    expect(served()).toBeLessThanOrEqual(maxAnswerBytes + socketsHold);
  });

  it('that announces more than the cap is refused before its body is read', async () => {
    const { server, served } = await start(store, 'listing', 'announced');
    const error = await effectError(
      store.provider(server.url, defaultDownloadLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
    expect(error.message).toContain('announces 1 TiB');
    expect(served()).toBeLessThanOrEqual(socketsHold);
  });

  it('to a read that fails with an error body that never ends fails having been sent no more than the cap', async () => {
    const { server, served } = await start(store, 'read', 'endless');
    const error = await effectError(
      store.provider(server.url, defaultDownloadLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error.kind).not.toBe('unknown');
    expect(served()).toBeLessThanOrEqual(maxAnswerBytes + socketsHold);
  });

  it('that trickles forever ends below the minimum rate as a timeout', async () => {
    const { server, runs } = await start(store, 'listing', 'trickle');
    const error = await effectError(
      store.provider(server.url, slowLimits).download(store.uri(server.url), staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(error.message).toContain('too slow');
    // The client hung up: the trickle is not left running.
    await Promise.all(runs.map((run) => run.closed));
  });

  it('to a read whose error answer trickles forever ends, the trickle dropped below the minimum rate', async () => {
    const { server, runs } = await start(store, 'read', 'trickle');
    const error = await effectError(
      store.provider(server.url, slowLimits).download(store.uri(server.url), staging.path, never),
    );
    // The store's 403 with its words left unread, or the trickle's timeout: an end, within the rate's window.
    expect(error.kind).not.toBe('unknown');
    await Promise.all(runs.map((run) => run.closed));
  });
});
