/** The memory a bench child reports: its RSS at the start, the highest sampled while it ran, and the kernel's peak. */

/** How often the RSS is sampled, in ms. */
export const rssSampleEveryMs = 50;

/** The memory figures of one run, in bytes. */
export interface RssFigures {
  /** RSS when sampling started. */
  readonly startRssBytes: number;
  /** The highest RSS sampled every `rssSampleEveryMs` ms, and once more at the end. */
  readonly peakRssBytes: number;
  /** `process.resourceUsage().maxRSS` at the end (the kernel's own peak). */
  readonly maxRssBytes: number;
}

/** Starts sampling this process's RSS; `stop` ends it and gives the figures. */
export const sampleRss = (): { stop(): RssFigures } => {
  const startRssBytes = process.memoryUsage.rss();
  let peakRssBytes = startRssBytes;
  const sample = (): void => {
    peakRssBytes = Math.max(peakRssBytes, process.memoryUsage.rss());
  };
  const sampler = setInterval(sample, rssSampleEveryMs);
  return {
    stop: () => {
      clearInterval(sampler);
      sample();
      // maxRSS is in KiB.
      return { startRssBytes, peakRssBytes, maxRssBytes: process.resourceUsage().maxRSS * 1024 };
    },
  };
};
