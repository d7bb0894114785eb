/** `npm run demo` as a test: the built demo drives the real agent through its scripted updates and ends cleanly. */
import { join } from 'node:path';
import { killAllCli, runCli } from '../helpers/cli-process';

const demoPath = join(__dirname, '..', '..', 'dist', 'demo.js');

afterEach(killAllCli);

describe('npm run demo', () => {
  it('loads, changes, keeps through a bad edit and removes models, then the agent exits 0 on SIGTERM', async () => {
    const result = await runCli([], { cliPath: demoPath, timeoutMs: 60_000 });
    const shown = result.stdout.lines;
    expect(result.code).toBe(0);
    expect(shown).toContain('  loaded on the server: iris, mnist');
    expect(shown).toContain('  loaded on the server: iris, mnist, wine');
    expect(shown.filter((line) => line.includes('config rejected'))).toHaveLength(1);
    expect(shown).toContain('  loaded on the server: iris, wine');
    expect(shown).toContain('  agent exited with code 0');
  });
});
