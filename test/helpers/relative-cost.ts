/** relativeCost: how much longer one piece of work takes than another on this machine, whatever its load. */

/** The fastest of `runs` runs of `work`, in ms: load only ever adds time, so the fastest is closest to the work. */
const fastestMs = (runs: number, work: () => unknown): number => {
  let fastest = Infinity;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    work();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
};

/**
 * How many times as long `work` takes as `baseline`, each the fastest of seven runs, interleaved: a bound on an
 * algorithm's cost (linear, not quadratic) that holds on a slow or busy machine, where a bound in ms does not.
 * The baseline counts as at least 1 ms, below which a timer's resolution and one preemption are all there is.
 */
export const relativeCost = (work: () => unknown, baseline: () => unknown): number => {
  let [worst, base] = [Infinity, Infinity];
  for (let round = 0; round < 7; round++) {
    worst = Math.min(worst, fastestMs(1, work));
    base = Math.min(base, fastestMs(1, baseline));
  }
  return worst / Math.max(base, 1);
};
