/**
 * `npm run demo -- --server <kind>`: the built demo compiles its real-server launcher and runs the same story
 * against real MLServer and Triton, printing after each step an inference answer that tells the model's version.
 */
import { join } from 'node:path';
import { killAllCli, runCli } from '../helpers/cli-process';

jest.setTimeout(180_000);

const demoPath = join(__dirname, '..', '..', 'dist', 'demo', 'demo.js');

afterEach(killAllCli);

/** The inference lines printed after the step titled `step` (up to the next step). */
const inferenceAfter = (lines: ReadonlyArray<string>, step: string): string[] => {
  const from = lines.findIndex((line) => line.includes(step));
  const next = lines.findIndex((line, index) => index > from && line.includes('== '));
  return lines.slice(from, next).filter((line) => line.startsWith('  inference: '));
};

describe.each(['mlserver', 'triton'])('npm run demo -- --server %s', (kind) => {
  it('tells each step by what the real server answers: v1, then v2 in its place; the others keep serving', async () => {
    const result = await runCli(['--server', kind], { cliPath: demoPath, timeoutMs: 170_000 });
    const shown = result.stdout.lines;
    expect(result.code).toBe(0);
    expect(shown).toContainEqual(
      expect.stringMatching(new RegExp(`from deploy/overlays/${kind}\\) on http://`)),
    );
    expect(inferenceAfter(shown, 'wine is added')).toEqual([
      '  inference: iris → answers 1 (the v1 model)',
      '  inference: mnist → answers 1 (the v1 model)',
      '  inference: wine → answers 2 (the v2 model)',
    ]);
    expect(inferenceAfter(shown, 'iris gets a new storageUri')).toContain(
      '  inference: iris → answers 2 (the v2 model)',
    );
    expect(inferenceAfter(shown, 'ghost is added')).toEqual([
      '  inference: iris → answers 2 (the v2 model)',
      '  inference: wine → answers 2 (the v2 model)',
    ]);
    expect(shown).toContainEqual(expect.stringMatching(/^ {4}ghost +Failed +attempts \d+ +not-found: /));
    expect(shown).toContain('  agent exited with code 0');
  });
});

it('refuses a server it does not know, naming the ones it does', async () => {
  const result = await runCli(['--server', 'torchserve'], { cliPath: demoPath, timeoutMs: 30_000 });
  expect(result.code).toBe(2);
  expect(result.stderr.text).toContain('--server takes mlserver, triton or kserve, not "torchserve"');
});
