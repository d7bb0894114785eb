/** The CI bench check: ratios compared with the committed baseline, failing only past 2x worse, by suite. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareWithBaseline, writeBaseline, type Baseline, type Measured } from '../../bench/baseline';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('bench-baseline');

const baselineFile = (): string => {
  const file = join(tmp.path, 'baseline.json');
  writeFileSync(
    file,
    JSON.stringify({
      measured: {},
      ratios: {
        'swap: P1 latency vs floor': { ratio: 2, better: 'lower' },
        'adds: P3 ops vs floor': { ratio: 0.4, better: 'higher' },
      },
    }),
  );
  return file;
};

const measured = (suite: string, name: string, ratio: number, better: 'lower' | 'higher'): Measured =>
  ({
    suite,
    result: { checks: [{ name, ratio, better, withinBudget: true }] },
  }) as unknown as Measured;

describe('compareWithBaseline', () => {
  it('passes ratios within 2x of the baseline, whichever way they improve', () => {
    const comparison = compareWithBaseline(baselineFile(), [
      measured('swap', 'P1 latency vs floor', 3.9, 'lower'),
      measured('adds', 'P3 ops vs floor', 0.21, 'higher'),
    ]);
    expect(comparison.failed).toBe(false);
    expect(comparison.worseSuites).toEqual([]);
  });

  it('fails a ratio more than 2x worse and names its suite', () => {
    const comparison = compareWithBaseline(baselineFile(), [
      measured('swap', 'P1 latency vs floor', 4.1, 'lower'),
      measured('adds', 'P3 ops vs floor', 0.19, 'higher'),
    ]);
    expect(comparison.failed).toBe(true);
    expect(comparison.worseSuites).toEqual(['swap', 'adds']);
    expect(comparison.lines.filter((line) => line.startsWith('WORSE'))).toHaveLength(2);
  });

  it('lists a ratio the run did not measure without failing it', () => {
    const comparison = compareWithBaseline(baselineFile(), [
      measured('swap', 'P1 latency vs floor', 2, 'lower'),
    ]);
    expect(comparison.failed).toBe(false);
    expect(comparison.lines).toHaveLength(1);
  });

  it('fails a suite that threw by name, though its ratios are simply absent', () => {
    const comparison = compareWithBaseline(
      baselineFile(),
      [measured('swap', 'P1 latency vs floor', 2, 'lower')],
      new Map([['adds', 'Error: kserve-agent: every load answered: timed out']]),
    );
    expect(comparison.failed).toBe(true);
    expect(comparison.worseSuites).toEqual(['adds']);
    expect(comparison.lines).toContain('FAILED   adds: Error: kserve-agent: every load answered: timed out');
  });
});

describe('writeBaseline', () => {
  it("replaces the ratios of the suites that ran and keeps the others'", () => {
    const file = baselineFile();
    writeBaseline(file, [measured('swap', 'P1 median vs Go', 1.5, 'lower')], { commit: 'abc' });
    const written = JSON.parse(readFileSync(file, 'utf8')) as Baseline;
    expect(written.measured).toEqual({ commit: 'abc' });
    expect(written.ratios).toEqual({
      'adds: P3 ops vs floor': { ratio: 0.4, better: 'higher' },
      'swap: P1 median vs Go': { ratio: 1.5, better: 'lower' },
    });
  });
});
