/**
 * The exit code on the real process follows from the outcome of the work, never from the event loop running dry: a
 * process left with nothing to wait on before its mode says how the work ended exits 70 with one fatal line.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { killAllCli, runCli } from '../helpers/cli-process';
import { useHttpServers } from '../helpers/http-servers';
import { atLevel } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
const tmp = useTempDir('exit-outcome');
const serve = useHttpServers();

/**
 * A preload that unrefs every timer made after it: the bug class of an unref'd retry wait, where the event loop
 * runs dry while the work still waits on one of them.
 */
const unrefEveryTimer = (dir: string): string => {
  const path = join(dir, 'unref-every-timer.js');
  writeFileSync(
    path,
    `const timers = require('node:timers');
const unrefd = (make) => (...args) => { const timer = make(...args); timer.unref(); return timer; };
globalThis.setTimeout = unrefd(timers.setTimeout);
globalThis.setInterval = unrefd(timers.setInterval);
`,
  );
  return path;
};

describe('modelsync (the process)', () => {
  it('exits 70 with one fatal line, never 0, when its event loop runs dry before the work ends', async () => {
    // Every answer a 503: the first attempt fails and the retry waits on a timer that keeps nothing alive.
    const { url } = await serve((_request, response) => response.writeHead(503).end('busy'));
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['--max-attempts', '3', '--retry-base-ms', '500', `${url}/m.bin`, dest], {
      nodeFlags: ['--require', unrefEveryTimer(tmp.path)],
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(70);
    const lines = result.stderr.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const fatal = lines.filter(atLevel('fatal'));
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!['msg']).toContain('ran out of work before it finished');
  });

  it('exits 1 after its retries when every answer fails, its waits kept alive', async () => {
    const { url } = await serve((_request, response) => response.writeHead(503).end('busy'));
    const dest = join(tmp.path, 'mnt', 'models');

    const result = await runCli(['--max-attempts', '3', '--retry-base-ms', '50', `${url}/m.bin`, dest], {
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(1);
  });
});
