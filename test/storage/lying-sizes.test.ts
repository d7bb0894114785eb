/**
 * Stores whose object is not the size their listing gives: S3, GCS, Azure Blob and the Hub list `m/a` at 10 bytes
 * and then serve a body that never ends, framed by a Content-Length that lies, by chunks or by closing the connection,
 * or one that stops short. However it is framed, the read is cut at the first byte past the listed size: the download
 * fails having been sent no more than the sockets hold, with no byte past the 10 written.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { defaultDownloadLimits } from '../../src/storage/download-limits';
import { effectError } from '../helpers/effect-error';
import { sendEndless, socketsHold, type EndlessRun } from '../helpers/endless-answer';
import { useHttpServers } from '../helpers/http-servers';
import { listedBytes, stores } from '../helpers/raw-stores';
import { useTempDir } from '../helpers/temp-dir';

jest.setTimeout(60_000);

const serve = useHttpServers();
const staging = useTempDir('lying-sizes');
const never = new AbortController().signal;

/** How the object's body says where it ends. */
type Framing = 'content-length' | 'chunked' | 'close';

/**
 * An object store whose read brings more than was listed at the listed version: the code's word is `changed` (list
 * again, start whole). The Hub's files are fetched at a pinned commit, where nothing changes: the answer is wrong.
 * The Azure SDK refuses a download answer without a Content-Length before reading it: no download at all.
 */
const kindOf = (name: string, framing: Framing): string =>
  name === 'hub' || (name === 'azure' && framing !== 'content-length') ? 'invalid-response' : 'changed';

/** The one file the download lands (`m/a` below the prefix, `a` of the Hub repo), 0 bytes when none landed. */
const landed = (): Promise<number> =>
  stat(join(staging.path, 'a')).then(
    (stats) => stats.size,
    () => 0,
  );

describe.each(Object.keys(stores))('a %s object listed at 10 bytes', (name) => {
  const store = stores[name]!;

  /** Starts the store: its read of the object answered by `answer`, everything else as a good store would. */
  const start = (answer: (response: ServerResponse) => void) =>
    serve((request: IncomingMessage, response: ServerResponse) => {
      const url = new URL(request.url ?? '/', 'http://store');
      if (store.routeOf(url) === 'read') answer(response);
      else store.good(url, response);
    });

  it.each<Framing>(['content-length', 'chunked', 'close'])(
    'that never ends, framed by %s, fails at the first byte past the 10, none of it written',
    async (framing) => {
      const runs: EndlessRun[] = [];
      const server = await start((response) =>
        runs.push(
          sendEndless(response, {
            headers: {
              'content-type': 'application/octet-stream',
              etag: '"v"',
              ...(framing === 'content-length' ? { 'content-length': 2 ** 30 } : {}),
            },
            closes: framing === 'close',
            head: '',
            filler: 'x',
          }),
        ),
      );
      const error = await effectError(
        store
          .provider(server.url, defaultDownloadLimits)
          .download(store.uri(server.url), staging.path, never),
      );
      expect(error.kind).toBe(kindOf(name, framing));
      expect(error.retryable).toBe(true);
      expect(error.message).toMatch(new RegExp(`${listedBytes} bytes|content length`));
      expect(runs.reduce((sum, run) => sum + run.served(), 0)).toBeLessThanOrEqual(socketsHold);
      expect(await landed()).toBeLessThanOrEqual(listedBytes);
    },
  );

  it('that ends short when its connection closes fails, retryable', async () => {
    const server = await start((response) => {
      response.useChunkedEncodingByDefault = false;
      response.shouldKeepAlive = false;
      response.writeHead(200, { 'content-type': 'application/octet-stream', etag: '"v"' }).end('short');
    });
    const error = await effectError(
      store
        .provider(server.url, { ...defaultDownloadLimits })
        .download(store.uri(server.url), staging.path, never),
    );
    expect(error.retryable).toBe(true);
    expect(error.kind).not.toBe('unknown');
  });
});
