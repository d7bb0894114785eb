/** `npm run demo` as a test: the built demo drives the real agent through its scripted updates and ends cleanly. */
import { join } from 'node:path';
import { killAllCli, runCli } from '../helpers/cli-process';

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
