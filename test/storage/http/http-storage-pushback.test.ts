/**
 * httpStorage against a store that pushes back (HTTP 503 or 429 past two answers at once): the download slows to what
 * the store allows, waits out each push-back before asking again, and still ends byte-exact.
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { httpStorage } from '../../../src/storage/http/http-storage';
import { rangedBody } from '../../../src/testing/ranged-body';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';
import { pushingBack } from '../../../src/testing/pushing-back-store';

const never = new AbortController().signal;
const size = 64 * 1024 * 1024;
/**
 * Requests sent before the client heard the push-back arrive within this of it (one process, loopback; generous: a
 * busy machine delays a send it made before by hundreds of milliseconds, and at 500 a loaded CI run saw one arrive
 * later: the store and the client share one event loop, stalled as a whole). The pause is 2 s: past this, none.
 */
const burstMs = 1000;
/** The retry policy's wait after a push-back without Retry-After: at least the base (jitter 'at-least-base'). */
const retry = { maxAttempts: 8, baseMs: 2000, maxMs: 4000 };

describe('httpStorage against a store that pushes back', () => {
  const startServer = useHttpServers();
  const tmp = useTempDir('http-pushback');

  it.each([
    [503, '2', 1950],
    [429, undefined, 1950], // no Retry-After: the retry policy's base
  ] as const)(
    'fetches the file whole through a store answering %s (Retry-After %s) past two at once, never asking again within its pause',
    async (status, retryAfter, pauseMs) => {
      // 4 s on one connection: the download opens more, and is pushed back, on a loaded machine too (at 64 MiB/s
      // one run of a loaded full suite was never pushed back).
      const body = rangedBody({ size, etag: '"v1"', bytesPerSecond: 16 * 1024 * 1024 });
      const store = pushingBack(body.handle, { allowed: 2, status, ...(retryAfter && { retryAfter }) });
      const { url } = await startServer(store.handle);
      const target = path.join(tmp.path, `t${status}`);
      await mkdir(target);
      await httpStorage({ streams: 8, retry }).download(`${url}/m.bin`, target, never);
      const saved = await readFile(path.join(target, 'm.bin'));
      expect(saved.length).toBe(size);
      const pushbacks = store.requests.filter((entry) => entry.pushedBack);
      // It was pushed back, and each time waited: past the requests already sent with it (a burst), none came
      // within the pause. A push-back that comes while the pause runs answers a request of the burst (sent before
      // the client heard the first one, later on a loaded machine): the pause runs from the first (StorePressure).
      expect(pushbacks.length).toBeGreaterThan(0);
      expect(pushbacks.length).toBeLessThanOrEqual(16);
      const pauses: number[] = [];
      for (const { at } of pushbacks) {
        const last = pauses.at(-1);
        if (last === undefined || at >= last + pauseMs) pauses.push(at);
      }
      for (const at of pauses) {
        const soon = store.requests.filter((entry) => entry.at > at + burstMs && entry.at < at + pauseMs);
        expect(soon).toEqual([]);
      }
    },
  );
});
