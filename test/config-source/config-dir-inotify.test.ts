/**
 * The config dir's inotify watch refused by the kernel's limits, as Node reports it: `fs.watch` throws
 * "EMFILE: too many open files" when inotify_init1 finds the uid's instances used up (fs.inotify.max_user_instances,
 * 128 on many nodes, shared by every container that runs as the uid) and "ENOSPC: no space left on device" when
 * inotify_add_watch finds its watches used up (fs.inotify.max_user_watches). Neither names the limit.
 */
import pino from 'pino';
import type { Subscription } from 'rxjs';
import { configDirSource } from '../../src/config-source/config-dir';
import { waitFor } from '../../src/testing/wait';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

jest.mock('node:fs', () => {
  const actual = jest.requireActual<typeof import('node:fs')>('node:fs');
  return { ...actual, watch: jest.fn(actual.watch) };
});
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the mocked module, to script its watch
const mockedFs = require('node:fs') as { watch: jest.Mock };

let subscription: Subscription | undefined;
afterEach(() => {
  subscription?.unsubscribe();
  mockedFs.watch.mockReset();
});
const tmp = useTempDir('config-dir-inotify');

/** The error Node's fs.watch throws for `dir` with `code` (its own message, errno, syscall and path). */
const nodeWatchError = (dir: string, code: 'EMFILE' | 'ENOSPC'): Error =>
  Object.assign(
    new Error(
      `${code}: ${code === 'EMFILE' ? 'too many open files' : 'no space left on device'}, watch '${dir}'`,
    ),
    { code, errno: code === 'EMFILE' ? -24 : -28, syscall: 'watch', path: dir },
  );

describe('configDirSource, when the kernel refuses the inotify watch', () => {
  it.each([
    ['EMFILE', 'fs.inotify.max_user_instances'],
    ['ENOSPC', 'fs.inotify.max_user_watches'],
  ] as const)(
    'names the inotify limit behind %s and the polling flag that does without it',
    async (code, limit) => {
      const dir = tmp.path;
      mockedFs.watch.mockImplementation(() => {
        throw nodeWatchError(dir, code);
      });
      const sink = new LogSink();
      subscription = configDirSource({
        dir,
        log: pino(sink),
        recheckMs: 20,
        pollName: '--watch-poll-ms',
      }).events$.subscribe();
      await waitFor(
        () => sink.withMessage('config watcher failed; re-establishing it').length > 0,
        5000,
        'the warn line',
      );
      const [line] = sink.withMessage('config watcher failed; re-establishing it');
      const err = line?.['err'] as Record<string, unknown>;
      expect(err['code']).toBe(code);
      expect(err['message']).toContain(dir);
      expect(err['message']).toContain(limit);
      expect(err['message']).toContain('--watch-poll-ms');
    },
  );

  it('leaves any other failure of the watch as Node tells it', async () => {
    const dir = tmp.path;
    const denied = Object.assign(new Error(`EACCES: permission denied, watch '${dir}'`), { code: 'EACCES' });
    mockedFs.watch.mockImplementation(() => {
      throw denied;
    });
    const sink = new LogSink();
    subscription = configDirSource({ dir, log: pino(sink), recheckMs: 20 }).events$.subscribe();
    await waitFor(
      () => sink.withMessage('config watcher failed; re-establishing it').length > 0,
      5000,
      'the warn line',
    );
    const [line] = sink.withMessage('config watcher failed; re-establishing it');
    expect((line?.['err'] as Record<string, unknown>)['message']).toBe(denied.message);
  });
});
