/** configDirSource on real dirs: re-arming a failed watch, and reads through ..data. */
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { Observable, type Subscription } from 'rxjs';
import { configDirSource, readConfigFile } from '../../src/edge/config-dir';
import type { FsEvent } from '../../src/ports';
import { atomicWrite } from '../../src/testing/atomic-writer';
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
});

describe('readConfigFile', () => {
  it('reads through the resolved ..data link of a kubelet-managed dir', async () => {
    const dir = tmp.path;
    atomicWrite(dir, { 'models.json': '[1]' });
    const read = await readConfigFile(dir);
    expect(read).toEqual({ _tag: 'Right', right: { file: join(dir, 'models.json'), text: '[1]' } });
  });

  it('reads a plain models.json when there is no ..data link', async () => {
    const dir = tmp.path;
    await writeFile(join(dir, 'models.json'), '[]');
    expect(await readConfigFile(dir)).toEqual({
      _tag: 'Right',
      right: { file: join(dir, 'models.json'), text: '[]' },
    });
  });

  it('says why when models.json is missing, naming the file', async () => {
    const dir = tmp.path;
    const read = await readConfigFile(dir);
    expect(read._tag).toBe('Left');
    expect(read._tag === 'Left' && read.left).toMatchObject({
      _tag: 'ReadFailed',
      file: join(dir, 'models.json'),
      code: 'ENOENT',
    });
  });

  it('gives up with ENOENT when ..data points at a version that is gone', async () => {
    const dir = tmp.path;
    await mkdir(dir, { recursive: true });
    await symlink('..2026_01_01_00_00_00.1', join(dir, '..data'));
    const read = await readConfigFile(dir);
    expect(read._tag === 'Left' && read.left).toMatchObject({ _tag: 'ReadFailed', code: 'ENOENT' });
  });
});
