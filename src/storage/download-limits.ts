/** downloadLimits: the caps every storage provider holds one model's download to, and the errors they fail with. */
import { defaultAppConfig, flagTable, type AppConfig } from '../core/flags/app-config';
import { permanentError, retryableError, type EffectError } from '../core/errors';
import { showBytes } from '../core/show-bytes';
import type { SpaceCheck } from '../fs';

/** The slowest transfer worth keeping: at least `bytesPerSecond` on average over every `windowMs`. */
export interface MinRate {
  /** 0 turns the check off. */
  readonly bytesPerSecond: number;
  readonly windowMs: number;
}

/** The limits of one model's download, whatever the provider (flags `--max-model-bytes` and the like). */
export interface DownloadLimits {
  /** Most bytes one model may take: what is downloaded or copied, and again what an archive expands to. */
  readonly maxModelBytes: number;
  /** Most bytes an archive may expand to per compressed byte, once it is past `ratioGraceBytes`. */
  readonly maxArchiveRatio: number;
  /** Most entries (files, dirs, links) one archive may hold. */
  readonly maxArchiveEntries: number;
  /** Most objects one model's object-store listing may name. */
  readonly maxModelFiles: number;
  /** The slowest transfer a network provider keeps going; slower ones fail retryably (`timeout`). */
  readonly minRate: MinRate;
  /** How often a running download reports its progress (`--progress-interval-ms`; 0: never). Not a limit. */
  readonly progressIntervalMs: number;
  /** The disk check of a declared size (`spaceCheck` in free-space.ts, `--min-free-bytes`); absent: none. */
  readonly spaceCheck?: SpaceCheck;
}

/**
 * Expanded bytes no ratio applies to: below this no bomb can hurt a volume, and a small archive of a
 * zero-filled file (a test model, a sparse tensor) may legitimately expand more than any ratio.
 */
export const ratioGraceBytes = 16 * 2 ** 20;

type LimitSettings = Pick<
  AppConfig,
  | 'maxModelBytes'
  | 'maxArchiveRatio'
  | 'maxArchiveEntries'
  | 'maxModelFiles'
  | 'minDownloadRate'
  | 'progressIntervalMs'
>;

/** The limits an AppConfig sets. */
export const downloadLimitsOf = (config: LimitSettings): DownloadLimits => ({
  maxModelBytes: config.maxModelBytes,
  maxArchiveRatio: config.maxArchiveRatio,
  maxArchiveEntries: config.maxArchiveEntries,
  maxModelFiles: config.maxModelFiles,
  minRate: { bytesPerSecond: config.minDownloadRate, windowMs: 60_000 },
  progressIntervalMs: config.progressIntervalMs,
});

/** The limits of the flags' defaults. */
export const defaultDownloadLimits: DownloadLimits = downloadLimitsOf(defaultAppConfig);

/** The permanent `too-large` failure of `what`: `why`, naming the flag whose cap it passed. */
export const tooLarge = (
  what: string,
  why: string,
  field: 'maxModelBytes' | 'maxArchiveRatio' | 'maxArchiveEntries' | 'maxModelFiles',
): EffectError => permanentError('too-large', `${what}: too large: ${why} (${flagTable[field].flag})`);

/** The retryable `timeout` failure of a transfer slower than `rate`, having moved `bytes` in its last window. */
export const tooSlow = (what: string, bytes: number, rate: MinRate): EffectError =>
  retryableError(
    'timeout',
    `${what} too slow: ${showBytes(bytes)} in the last ${rate.windowMs} ms, below ` +
      `${showBytes(rate.bytesPerSecond)}/s (${flagTable.minDownloadRate.flag})`,
  );
