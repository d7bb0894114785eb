/** `npm run demo` as a test: the built demo drives the real agent through its scripted updates and ends cleanly. */
import { join } from 'node:path';
import { killAllCli, runCli } from '../helpers/cli-process';
import { removeTempDir, tempDir } from '../helpers/temp-dir';

const demoPath = join(__dirname, '..', '..', 'dist', 'demo', 'demo.js');

afterEach(killAllCli);

describe('npm run demo', () => {
  it('loads, changes, keeps through a bad edit, removes and fails models, then the agent exits 0 on SIGTERM', async () => {
    const result = await runCli([], { cliPath: demoPath, timeoutMs: 60_000 });
    const shown = result.stdout.lines;
    expect(result.code).toBe(0);
    expect(shown).toContain('  loaded on the server: iris, mnist');
    expect(shown).toContain('  loaded on the server: iris, mnist, wine');
    expect(shown.filter((line) => line.includes('config rejected'))).toHaveLength(1);
    expect(shown.filter((line) => line === '  loaded on the server: iris, wine')).toHaveLength(2);
    expect(
      shown.filter((line) => line.includes('model failed') && line.includes('model=ghost')),
    ).toHaveLength(1);
    expect(shown).toContain('  agent exited with code 0');
    expect(shown).toContainEqual(expect.stringMatching(/HTTP surface: http:\/\/127\.0\.0\.1:\d+\/status/));
    expect(shown).toContainEqual(expect.stringMatching(/^ {4}ghost +Failed +attempts \d+ +not-found: /));
    expect(shown).toContainEqual(expect.stringMatching(/^ {4}modelsync_\w+.* → /));
  });
});

describe('npm run demo -- --server <kind>', () => {
  it('installs only the server asked for, saying before each long step what it does and about how long it takes', async () => {
    // A fresh install cache and a python that is not there: the installer fails at once, naming what it tried.
    const cache = await tempDir('demo-cache');
    try {
      const result = await runCli(['--server', 'mlserver'], {
        cliPath: demoPath,
        env: { MODEL_SERVERS_CACHE: cache, MODEL_SERVERS_PYTHON: 'no-such-python3.11' },
        timeoutMs: 120_000,
      });
      expect(result.code).toBe(1);
      expect(result.stdout.lines).toEqual([
        expect.stringMatching(/^demo: compiling the real-server launcher .+ with tsc: about 15 s/),
        expect.stringMatching(/^demo: installing mlserver into .+: the first time a few minutes/),
      ]);
      const installing = result.stderr.lines.flatMap(
        (line) => /^\[model-servers\] (?:failed: )?(\w+)/.exec(line)?.[1] ?? [],
      );
      expect(installing.length).toBeGreaterThan(0);
      expect(new Set(installing)).toEqual(new Set(['mlserver']));
    } finally {
      await removeTempDir(cache);
    }
  }, 150_000);
});
