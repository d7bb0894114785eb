/** The committed baseline of quick-mode ratios (bench/baseline.json) and the CI check against it: ratios only, never times. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Better, SuiteResult } from './suite';

/** How much worse than its baseline a ratio may get before `npm run bench:check` fails. */
export const allowedFactor = 2;

/** One ratio as the baseline keeps it. */
export interface BaselineRatio {
  readonly ratio: number;
  readonly better: Better;
}

/** bench/baseline.json: where the ratios were measured, and each ratio by `<suite>: <check name>`. */
export interface Baseline {
  readonly measured: Readonly<Record<string, string | number | boolean>>;
  readonly ratios: Readonly<Record<string, BaselineRatio>>;
}

/** A suite's name and what it measured, as the runner holds it. */
export interface Measured {
  readonly suite: string;
  readonly result: SuiteResult;
}

/** Every check of `measured` that carries a ratio, by `<suite>: <check name>`. */
export const ratiosOf = (measured: ReadonlyArray<Measured>): Record<string, BaselineRatio> =>
  Object.fromEntries(
    measured.flatMap(({ suite, result }) =>
      (result.checks ?? []).flatMap((check) =>
        check.ratio === undefined || !Number.isFinite(check.ratio)
          ? []
          : [[`${suite}: ${check.name}`, { ratio: check.ratio, better: check.better ?? 'lower' }]],
      ),
    ),
  );

/**
 * Writes `file` with the ratios of `measured`; the ratios of suites this run did not measure are kept as they were
 * (`npm run bench -- --write-baseline <suite>` re-takes one suite's), those of a measured suite all replaced.
 */
export const writeBaseline = (
  file: string,
  measured: ReadonlyArray<Measured>,
  where: Baseline['measured'],
): void => {
  const ran = new Set(measured.map(({ suite }) => suite));
  const before = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Baseline).ratios : {};
  const kept = Object.entries(before).filter(([key]) => !ran.has(key.slice(0, key.indexOf(': '))));
  const baseline: Baseline = {
    measured: where,
    ratios: { ...Object.fromEntries(kept), ...ratiosOf(measured) },
  };
  writeFileSync(file, `${JSON.stringify(baseline, null, 2)}\n`);
};

/** How a ratio got worse: > 1 is worse than the baseline, whichever way the ratio improves. */
const worsening = (now: number, base: BaselineRatio): number => {
  if (base.better === 'lower') return base.ratio > 0 ? now / base.ratio : now > 0 ? Infinity : 1;
  return now > 0 ? base.ratio / now : base.ratio > 0 ? Infinity : 1;
};

/** The verdict of comparing a run with the baseline: a line per ratio, and whether any got too much worse. */
export interface Comparison {
  readonly lines: ReadonlyArray<string>;
  readonly failed: boolean;
  /** The suites that threw, or with a ratio more than `allowedFactor` times worse. */
  readonly worseSuites: ReadonlyArray<string>;
}

/**
 * Compares the ratios of `measured` with the baseline in `file`: a ratio fails when it is more than
 * `allowedFactor` times worse. A ratio the run did not measure (a suite skipped here) or the baseline lacks is
 * listed, not failed: only a measured regression fails CI.
 */
export const compareWithBaseline = (
  file: string,
  measured: ReadonlyArray<Measured>,
  failures: ReadonlyMap<string, string> = new Map(),
): Comparison => {
  const baseline = JSON.parse(readFileSync(file, 'utf8')) as Baseline;
  const now = ratiosOf(measured);
  const ranSuites = new Set(measured.map(({ suite }) => suite));
  // A suite that threw measured nothing: its ratios would pass unseen, so it fails the check by name.
  const lines = [...failures].map(([suite, why]) => `FAILED   ${suite}: ${why}`);
  const worseSuites = new Set<string>(failures.keys());
  for (const [key, base] of Object.entries(baseline.ratios)) {
    const current = now[key];
    if (current === undefined) {
      if (ranSuites.has(key.slice(0, key.indexOf(':')))) lines.push(`MISSING  ${key}: not measured this run`);
      continue;
    }
    const factor = worsening(current.ratio, base);
    const bad = factor > allowedFactor;
    if (bad) worseSuites.add(key.slice(0, key.indexOf(':')));
    lines.push(
      `${bad ? 'WORSE   ' : 'ok      '} ${key}: ${current.ratio} vs baseline ${base.ratio} ` +
        `(${base.better} is better; ${factor.toFixed(2)}x the baseline's, limit ${allowedFactor}x)`,
    );
  }
  for (const key of Object.keys(now).filter((key) => !(key in baseline.ratios)))
    lines.push(`NEW      ${key}: ${now[key]!.ratio} (no baseline yet)`);
  return { lines, failed: worseSuites.size > 0, worseSuites: [...worseSuites] };
};
