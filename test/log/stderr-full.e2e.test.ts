/**
 * Logs never hold the process (issue #17): the real CLI with stderr a pipe nobody reads (it fills at 64 KiB)
 * still syncs every model and exits on SIGTERM within its shutdown bound. With synchronous writes to the pipe the
 * first full write blocked the event loop for good: no more work, and the SIGTERM handler never ran.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { waitFor, withTimeout } from '../../src/testing/wait';
import { resyncWorld, type ResyncWorld } from '../integration/resync-world';
import { cliArgs, cliPath } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('stderr-full');
let world: ResyncWorld;
beforeEach(async () => {
  world = await resyncWorld(tmp.path);
});
afterEach(() => world.close());

const models = Array.from({ length: 500 }, (_, i) => `m${String(i).padStart(3, '0')}`);

describe('the CLI with a stderr nobody reads', () => {
  it('syncs 500 models (megabytes of log lines) and exits 0 on SIGTERM within the shutdown bound', async () => {
    await Promise.all(models.map((name) => world.addModel(name)));
    world.writeConfig(models);
    const child = spawn(
      process.execPath,
      [cliPath, ...cliArgs(world.flags({ 'log-level': 'debug', 'shutdown-timeout': '1s' }))],
      { env: { ...process.env, MODELSYNC_HTTP_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    // stderr is never read: paused, with nothing taking its data, the pipe stays full once filled.
    child.stderr.pause();
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      await waitFor(() => world.server().loaded.size === models.length, 60_000, 'all 500 models loaded');
      child.kill('SIGTERM');
      // --shutdown-timeout 1s, the 1 s bound on the last log lines, and room for a slow machine.
      const [code, signal] = await withTimeout(exited, 10_000, () => 'the CLI to exit after SIGTERM');
      expect({ code, signal }).toEqual({ code: 0, signal: null });
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);
});
