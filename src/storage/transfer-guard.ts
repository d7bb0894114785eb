/** TransferGuard: any byte stream of a download held to the limits — a byte cap and a minimum rate over a sliding window. */
import type { EffectError } from '../core/errors';
import { showBytes } from '../core/show-bytes';
import type { SpaceCheck } from '../fs';
import { tooLarge, tooSlow, type CapNames, type DownloadLimits, type MinRate } from './download-limits';

/** What one guard watches, and how it stops a transfer that is too slow. */
export interface TransferGuardOptions {
  /** Names the transfer in messages: `GET https://host/m.bin`, `copying /mnt/pvc/m`. */
  readonly what: string;
  /** Most bytes all the guarded streams together may carry (the model cap). */
  readonly maxBytes: number;
  /** What the user calls the model cap (`names.maxModelBytes`), named when a transfer passes it. */
  readonly names?: CapNames | undefined;
  /** The slowest acceptable stream; absent or 0 bytes/s: no minimum (local copies). */
  readonly minRate?: MinRate;
  /** Told once of a rate below the minimum, with the error to fail with: it must abort (a silent stream cannot). */
  readonly onTooSlow?: (error: EffectError) => void;
  /** Where the bytes go, and the disk check a declared size must pass there; absent: none. */
  readonly space?: { readonly dir: string; readonly check?: SpaceCheck | undefined };
  /** Runs `tick` every `ms` until the returned function is called; default everyInterval (tests drive their own). */
  readonly every?: (ms: number, tick: () => void) => () => void;
}

// A window is this many ticks: the rate is checked every tenth of a window, over the last whole window.
const ticksPerWindow = 10;

/** Runs `tick` every `ms` on an unref'd timer until the returned function is called. */
export const everyInterval = (ms: number, tick: () => void): (() => void) => {
  const timer = setInterval(tick, ms);
  timer.unref();
  return () => clearInterval(timer);
};

/**
 * Counts the bytes of one model's transfer across all its streams: a size announced up front is checked by `admit`,
 * a stream past the cap fails in `count` (`too-large`, permanent), and while streams are read a window with fewer
 * bytes than the minimum rate calls `onTooSlow` (`timeout`, retryable). One addition per chunk; the rate on a timer.
 */
export class TransferGuard {
  private bytes = 0;
  private sinceTick = 0;
  private readonly ticks: number[] = [];
  private slow: EffectError | undefined;
  private streamsReading = 0;
  private stopTicking: () => void = () => undefined;

  constructor(private readonly options: TransferGuardOptions) {}

  /** The bytes counted so far. */
  get total(): number {
    return this.bytes;
  }

  /**
   * Fails at once when `size` more bytes would pass the cap (`too-large`) or not fit on the volume they go to
   * (`no-space`, the `space` check); counts nothing.
   */
  async admit(size: number): Promise<void> {
    if (this.bytes + size > this.options.maxBytes) {
      const announced = this.bytes === 0 ? `it is ${showBytes(size)}` : `${showBytes(size)} more`;
      throw this.overCap(`${announced}, over the cap of ${showBytes(this.options.maxBytes)}`);
    }
    const { space } = this.options;
    await space?.check?.(space.dir, size, this.options.what);
  }

  /** Counts `size` bytes moved without a stream (a kernel copy); fails with `too-large` when they pass the cap. */
  counted(size: number): void {
    this.bytes += size;
    if (this.bytes > this.options.maxBytes) {
      throw this.overCap(`it passed the cap of ${showBytes(this.options.maxBytes)}`);
    }
  }

  /** `source`, counted: fails with `too-large` on the chunk that passes the cap, before handing it on. */
  async *count(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    const stopReading = this.reading();
    try {
      for await (const chunk of source) {
        this.received(chunk.byteLength);
        yield chunk;
      }
    } finally {
      stopReading();
    }
  }

  /**
   * `count` without a generator, for a reader that loops over its stream itself (ranged parts, where a layer per
   * chunk costs more than the rest): call `reading()` when a stream starts (it returns the call for its end) and
   * `received(n)` for each chunk, which throws as `count` would (too large, too slow).
   */
  reading(): () => void {
    // The rate check runs from the first stream's start to the last one's end: streams read at once (the objects of
    // a bucket in flight) are one transfer, measured on one timer over the sum of their bytes.
    const rate = this.options.minRate;
    if (rate === undefined || rate.bytesPerSecond <= 0) return () => undefined;
    if (this.streamsReading++ === 0) {
      this.ticks.length = 0;
      this.sinceTick = 0;
      const every = this.options.every ?? everyInterval;
      this.stopTicking = every(rate.windowMs / ticksPerWindow, () => this.tick(rate));
    }
    return () => {
      if (--this.streamsReading === 0) this.stopTicking();
    };
  }

  /** See `reading`. */
  received(bytes: number): void {
    if (this.slow !== undefined) throw this.slow;
    this.sinceTick += bytes;
    this.counted(bytes);
  }

  private overCap(why: string): EffectError {
    return tooLarge(this.options.what, why, 'maxModelBytes', this.options.names);
  }

  private tick(rate: MinRate): void {
    this.ticks.push(this.sinceTick);
    this.sinceTick = 0;
    if (this.ticks.length > ticksPerWindow) this.ticks.shift();
    if (this.ticks.length < ticksPerWindow || this.slow !== undefined) return;
    const inWindow = this.ticks.reduce((sum, bytes) => sum + bytes, 0);
    if (inWindow >= (rate.bytesPerSecond * rate.windowMs) / 1000) return;
    this.slow = tooSlow(this.options.what, inWindow, rate);
    this.options.onTooSlow?.(this.slow);
  }
}

/**
 * The guard of one model's download into `targetDir` under `limits`: the model cap, the disk check and, with
 * `onTooSlow`, the minimum rate (local copies have none).
 */
export const modelGuard = (
  what: string,
  targetDir: string,
  limits: DownloadLimits,
  onTooSlow?: (error: EffectError) => void,
): TransferGuard =>
  new TransferGuard({
    what,
    maxBytes: limits.maxModelBytes,
    names: limits.names,
    ...(onTooSlow !== undefined ? { minRate: limits.minRate, onTooSlow } : {}),
    space: { dir: targetDir, check: limits.spaceCheck },
  });
