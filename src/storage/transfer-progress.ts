/** trackProgress: a download's bytes, total, rate and ETA reported at a steady pace (not per chunk), and once at its end. */
import type { DownloadProgress } from '../ports';
import { everyInterval } from './transfer-guard';

/** What is tracked, how often, and where reports go. */
export interface ProgressOptions {
  /** The bytes moved so far (a TransferGuard's `total`). */
  readonly bytes: () => number;
  /** The bytes the whole download will move, when known (a Content-Length, the listed objects' sizes). */
  readonly totalBytes: () => number | undefined;
  /** Milliseconds between reports; 0: only the final report. */
  readonly everyMs: number;
  readonly report: ((progress: DownloadProgress) => void) | undefined;
  /** Milliseconds since some fixed point; default `performance.now`. */
  readonly now?: () => number;
  /** Runs `tick` every `ms` until the returned function is called; default everyInterval. */
  readonly every?: (ms: number, tick: () => void) => () => void;
}

/**
 * Reports `options.bytes()` every `everyMs`: bytes, total, the last interval's rate and the time left at it. `stop()`,
 * called however the download ends, sends the final report (`done`, the average rate) once. No `report`: nothing.
 */
export const trackProgress = (options: ProgressOptions): { readonly stop: () => void } => {
  const { report } = options;
  if (report === undefined) return { stop: () => undefined };
  const now = options.now ?? (() => performance.now());
  const started = now();
  let last = { at: started, bytes: 0 };
  const snapshot = (done: boolean): DownloadProgress => {
    const at = now();
    const bytes = options.bytes();
    const totalBytes = options.totalBytes();
    const since = done ? { at: started, bytes: 0 } : last;
    const seconds = (at - since.at) / 1000;
    const bytesPerSecond = seconds > 0 ? Math.round((bytes - since.bytes) / seconds) : 0;
    last = { at, bytes };
    const left = totalBytes === undefined ? undefined : Math.max(0, totalBytes - bytes);
    return {
      bytes,
      ...(totalBytes !== undefined ? { totalBytes } : {}),
      elapsedMs: Math.round(at - started),
      bytesPerSecond,
      ...(left !== undefined && bytesPerSecond > 0 && !done
        ? { etaSeconds: Math.ceil(left / bytesPerSecond) }
        : {}),
      done,
    };
  };
  const stopTicking =
    options.everyMs > 0
      ? (options.every ?? everyInterval)(options.everyMs, () => report(snapshot(false)))
      : () => undefined;
  let stopped = false;
  return {
    stop: () => {
      if (stopped) return;
      stopped = true;
      stopTicking();
      report(snapshot(true));
    },
  };
};
