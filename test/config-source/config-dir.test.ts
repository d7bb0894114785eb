/** configDirSource on real dirs: re-arming a failed watch, and reading again after a read that hung. */
import type { Stats } from 'node:fs';
import fsPromises, { mkdir, open, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { firstValueFrom, Observable, type Subscription } from 'rxjs';
import { configDirSource } from '../../src/config-source/config-dir';
import type { FsEvent } from '../../src/ports';
import { waitFor } from '../../src/testing/wait';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

let subscription: Subscription | undefined;
afterEach(() => subscription?.unsubscribe());
const tmp = useTempDir('config-dir');

describe('configDirSource', () => {
  it('logs a failed watch and establishes a new one', async () => {
    const dir = tmp.path;
    const sink = new LogSink();
    let watches = 0;
    // The first watch fails as chokidar does on ENOSPC; the second one works.
    const watchDir = (): Observable<FsEvent> =>
      new Observable<FsEvent>((subscriber) => {
        watches++;
        if (watches === 1)
          subscriber.error(Object.assign(new Error('inotify watch limit reached'), { code: 'ENOSPC' }));
        else subscriber.next({ event: 'ready', name: '' });
      });
    const events: FsEvent[] = [];
    subscription = configDirSource({
      dir,
      log: pino({ level: 'debug' }, sink),
      recheckMs: 20,
      watchDir,
    }).events$.subscribe((event) => events.push(event));
    await waitFor(() => events.length > 0, 5000, 'the second watch');
    expect(watches).toBe(2);
    expect(events).toEqual([{ event: 'ready', name: '' }]);
    const failures = sink.withMessage('config watcher failed; re-establishing it');
    expect(failures).toHaveLength(1);
    expect(JSON.stringify(failures[0])).toContain('inotify watch limit reached');
  });

  it('says what is there when the config dir is no directory (--config-dir naming models.json itself), and watches the directory that replaces it', async () => {
    const dir = join(tmp.path, 'models.json');
    await writeFile(dir, '[]');
    const sink = new LogSink();
    const events: FsEvent[] = [];
    subscription = configDirSource({ dir, log: pino(sink), recheckMs: 20 }).events$.subscribe((event) =>
      events.push(event),
    );
    await waitFor(() => sink.lines.length > 0, 5000, 'a line about the config dir');
    expect(sink.lines.map((line) => [line['msg'], line['found']])).toEqual([
      ['config dir is not a directory; waiting for a directory there', 'a regular file'],
    ]);
    await rm(dir);
    await mkdir(dir);
    await waitFor(() => events.some((event) => event.event === 'ready'), 5000, 'the dir watched');
    expect(sink.withMessage('config dir does not exist; waiting for it')).toEqual([]);
  });

  it('logs a watch that keeps failing at its 1st, 2nd, 4th, 8th … failure, not at every retry', async () => {
    // The inotify limit reached stays reached: a warn line a second (recheckMs) filled the log for as long.
    const sink = new LogSink();
    let watches = 0;
    const watchDir = (): Observable<FsEvent> =>
      new Observable<FsEvent>((subscriber) => {
        watches++;
        subscriber.error(Object.assign(new Error('inotify watch limit reached'), { code: 'ENOSPC' }));
      });
    subscription = configDirSource({
      dir: tmp.path,
      log: pino({ level: 'debug' }, sink),
      recheckMs: 5,
      watchDir,
    }).events$.subscribe();
    await waitFor(() => watches >= 40, 10_000, '40 failed watches');
    subscription.unsubscribe();
    const failures = sink.withMessage('config watcher failed; re-establishing it');
    const attempts = failures.map((line) => line['attempt'] as number);
    expect(attempts.slice(0, 6)).toEqual([1, 2, 4, 8, 16, 32]);
    expect(failures.length).toBeLessThanOrEqual(Math.log2(watches) + 1);
  });

  it('sees a models.json written when it polls (--watch-poll-ms), as chokidar reports it', async () => {
    const dir = tmp.path;
    const events: FsEvent[] = [];
    subscription = configDirSource({ dir, log: pino({ level: 'silent' }), pollMs: 20 }).events$.subscribe(
      (event) => events.push(event),
    );
    await waitFor(() => events.some((event) => event.event === 'ready'), 5000, 'the polling watch to arm');
    await writeFile(join(dir, 'models.json'), '[]');
    await waitFor(() => events.some((event) => event.name === 'models.json'), 5000, 'the write to be polled');
    expect(events.find((event) => event.name === 'models.json')).toEqual({
      event: 'add',
      name: 'models.json',
    });
  });

  it('notices its dir removed at the watch event itself, without waiting for the periodic check', async () => {
    const dir = join(tmp.path, 'configs');
    await mkdir(dir);
    const sink = new LogSink();
    const events: FsEvent[] = [];
    // A minute between periodic checks: only the watch's own event can end the watch within the test.
    subscription = configDirSource({
      dir,
      log: pino({ level: 'debug' }, sink),
      recheckMs: 60_000,
    }).events$.subscribe((event) => events.push(event));
    await waitFor(() => events.some((event) => event.event === 'ready'), 5000, 'the watch to arm');
    await rm(dir, { recursive: true });
    await waitFor(() => sink.withMessage('config dir removed').length > 0, 5000, 'the removal to be noticed');
    expect(sink.withMessage('config watcher failed')).toEqual([]);
  });

  // A removal was two warn lines ("removed; waiting for it to come back", then "does not exist; waiting for it"), and
  // a dir replaced at once by another was told as removed and waited for, with nothing saying it was back.
  it('tells a removed config dir in one line, and a dir replaced by another in none', async () => {
    const dir = join(tmp.path, 'configs');
    await mkdir(dir);
    const sink = new LogSink();
    const events: FsEvent[] = [];
    subscription = configDirSource({ dir, log: pino(sink), recheckMs: 20 }).events$.subscribe((event) =>
      events.push(event),
    );
    const armed = async (count: number): Promise<void> =>
      waitFor(() => events.filter((event) => event.event === 'ready').length >= count, 5000, 'the watch');
    await armed(1);
    await rm(dir, { recursive: true });
    await waitFor(() => sink.lines.length > 0, 5000, 'the removal to be told');
    await new Promise((resolve) => setTimeout(resolve, 200)); // ten rechecks, which must not tell it again
    await mkdir(dir);
    await armed(2);
    expect(sink.lines.map((line) => line.msg)).toEqual(['config dir removed; waiting for it to come back']);

    await mkdir(`${dir}.new`);
    await rename(dir, `${dir}.old`);
    await rename(`${dir}.new`, dir);
    await armed(3);
    expect(sink.lines.map((line) => line.msg)).toEqual(['config dir removed; waiting for it to come back']);
  });

  describe('onAlive (the watch liveness /healthz reads)', () => {
    /** Watches `dir` with `watchDir`, rechecking every 20 ms; counts the calls of onAlive until `stop`. */
    const watchAlive = (dir: string, watchDir: () => Observable<FsEvent>) => {
      let alive = 0;
      const watching = configDirSource({
        dir,
        log: pino({ level: 'silent' }),
        recheckMs: 20,
        watchDir,
        onAlive: () => alive++,
      }).events$.subscribe();
      subscription = watching;
      return { calls: (): number => alive, stop: () => watching.unsubscribe() };
    };
    /** Resolves once onAlive has been called `times` times: as many rechecks as that take, however slow the host. */
    const calledAgainAndAgain = async (dir: string, watchDir: () => Observable<FsEvent>, times = 3) => {
      const watch = watchAlive(dir, watchDir);
      await waitFor(() => watch.calls() >= times, 10_000, `${times} calls of onAlive`);
      watch.stop();
    };
    /** The calls of onAlive over 8 rechecks after the first one (a slow host only makes fewer rechecks). */
    const callsAfterStart = async (watchDir: () => Observable<FsEvent>): Promise<number> => {
      const watch = watchAlive(tmp.path, watchDir);
      await waitFor(() => watch.calls() >= 1, 10_000, 'the call of onAlive as watching starts');
      await new Promise((resolve) => setTimeout(resolve, 8 * 20));
      watch.stop();
      return watch.calls();
    };
    const armedQuiet = (): Observable<FsEvent> =>
      new Observable<FsEvent>((subscriber) => subscriber.next({ event: 'ready', name: '' }));
    const neverArms = (): Observable<FsEvent> => new Observable<FsEvent>(() => undefined);
    const armsThenFails = (): Observable<FsEvent> =>
      new Observable<FsEvent>((subscriber) => {
        subscriber.next({ event: 'ready', name: '' });
        subscriber.error(Object.assign(new Error('inotify watch limit reached'), { code: 'ENOSPC' }));
      });

    it('is called again and again by an armed watch that sees no change', async () => {
      await calledAgainAndAgain(tmp.path, armedQuiet);
    });

    it('is called again and again while the dir is missing: there is nothing to watch', async () => {
      await calledAgainAndAgain(join(tmp.path, 'missing'), neverArms);
    });

    it('is called by an armed watch at its own pace (armedRecheckMs), not at the pace of the search for a missing dir', async () => {
      let alive = 0;
      subscription = configDirSource({
        dir: tmp.path,
        log: pino({ level: 'silent' }),
        recheckMs: 20,
        armedRecheckMs: 60_000, // an idle agent's watch is stat'ed a few times a stall, not every 20 ms
        watchDir: armedQuiet,
        onAlive: () => alive++,
      }).events$.subscribe();
      await waitFor(() => alive >= 1, 10_000, 'the call of onAlive as watching starts');
      await new Promise((resolve) => setTimeout(resolve, 8 * 20));
      expect(alive).toBe(1);
    });

    it('is called only when watching starts by a watch that never arms or keeps failing', async () => {
      expect(await callsAfterStart(neverArms)).toBe(1);
      expect(await callsAfterStart(armsThenFails)).toBe(1);
    });
  });

  describe('a stat of the dir that hangs (a dead NFS or FUSE mount)', () => {
    afterEach(() => {
      subscription?.unsubscribe();
      jest.restoreAllMocks();
      jest.useRealTimers();
    });

    /**
     * Watches `dir` (missing or not) with a watch that arms and stays quiet, while its stat hangs for 1,000 recheck
     * ticks; then the stat returns: how many more stats ran at once, with no more time passing.
     */
    const statsQueuedBehindHungStat = async (dirExists: boolean): Promise<number> => {
      jest.useFakeTimers();
      const dir = join(tmp.path, 'configs');
      let stats = 0;
      let hang = false;
      let release: (() => void) | undefined;
      const found = { isDirectory: () => dirExists, ino: 7 } as Stats;
      const missing = Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      const stat = async (): Promise<Stats> => {
        stats++;
        if (hang) await new Promise<void>((resolve) => (release = resolve));
        if (!dirExists) throw missing;
        return found;
      };
      jest.spyOn(fsPromises, 'stat').mockImplementation(stat);
      const watchDir = (): Observable<FsEvent> =>
        new Observable<FsEvent>((subscriber) => subscriber.next({ event: 'ready', name: '' }));
      subscription = configDirSource({
        dir,
        log: pino({ level: 'silent' }),
        recheckMs: 10,
        watchDir,
      }).events$.subscribe();
      await jest.advanceTimersByTimeAsync(50);
      hang = true;
      await jest.advanceTimersByTimeAsync(10_000);
      expect(release).toBeDefined();
      hang = false;
      const before = stats;
      release!();
      for (let i = 0; i < 50; i++) await Promise.resolve();
      await jest.advanceTimersByTimeAsync(0);
      return stats - before;
    };

    it('queues no stat per tick behind it while the dir is watched, nor while it is awaited', async () => {
      expect(await statsQueuedBehindHungStat(true)).toBeLessThanOrEqual(1);
      subscription?.unsubscribe();
      expect(await statsQueuedBehindHungStat(false)).toBeLessThanOrEqual(1);
    });
  });

  it('gives up a read that hangs, starts no second one meanwhile, and reads again once it returns', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), '[]');
    let opens = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first open hangs, as on a dead NFS or FUSE mount, until the test releases it.
    const openFile = async (path: string, flags: number): Promise<FileHandle> => {
      if (++opens === 1) await released;
      return open(path, flags);
    };
    const source = configDirSource({ dir, log: pino({ level: 'silent' }), readTimeoutMs: 100, openFile });
    const events: FsEvent[] = [];
    subscription = source.events$.subscribe((event) => events.push(event));
    const timedOut = {
      _tag: 'Left',
      left: {
        _tag: 'ReadFailed',
        file: join(dir, 'models.json'),
        code: 'ETIMEDOUT',
        reason:
          'reading it has not finished after 100 ms (a hung file system?); it is read again once that read returns',
      },
    };
    expect(await firstValueFrom(source.read())).toEqual(timedOut);
    expect(await firstValueFrom(source.read())).toEqual(timedOut);
    expect(opens).toBe(1);
    release();
    await waitFor(
      () => events.some((e) => e.event === 'change' && e.name === 'models.json'),
      5000,
      'a re-read',
    );
    expect(await firstValueFrom(source.read())).toEqual({
      _tag: 'Right',
      right: { file: join(dir, 'models.json'), text: '[]' },
    });
    expect(opens).toBe(2);
  });
});
