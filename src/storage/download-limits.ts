/** downloadLimits: the caps every storage provider holds one model's download to, and the errors they fail with. */
import { permanentError, retryableError, type EffectError } from '../core/errors';
import { showBytes } from '../core/show-bytes';
import type { SpaceCheck } from '../fs';

/** The slowest transfer worth keeping: at least `bytesPerSecond` on average over every `windowMs`. */
export interface MinRate {
  /** 0 turns the check off. */
  readonly bytesPerSecond: number;
  readonly windowMs: number;
  /** What the user calls the rate, named when a transfer is too slow (the CLI's flag); default `minRate`. */
  readonly name?: string;
}

/** The caps of one model's download, by the field that sets each. */
export type CapField = 'maxModelBytes' | 'maxArchiveRatio' | 'maxArchiveEntries' | 'maxModelFiles';

/** What the user calls each cap, named by the failure of a download past it (the CLI's flags); default the field. */
export type CapNames = Readonly<Partial<Record<CapField, string>>>;

/** The limits of one model's download, whatever the provider. */
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
  /** How often a running download reports its progress (0: never). Not a limit. */
  readonly progressIntervalMs: number;
  /** The disk check of a declared size (`spaceCheck` in free-space.ts); absent: none. */
  readonly spaceCheck?: SpaceCheck;
  readonly names?: CapNames;
}

/** The cap of one model's listing (an object store's, the Hub's tree): its files, and what the user calls it. */
export type ListingCap = Pick<DownloadLimits, 'maxModelFiles' | 'names'>;

/**
 * Expanded bytes no ratio applies to: below this no bomb can hurt a volume, and a small archive of a
 * zero-filled file (a test model, a sparse tensor) may legitimately expand more than any ratio.
 */
export const ratioGraceBytes = 16 * 2 ** 20;

/** The limits of a pod: what the CLI's flags default to. */
export const defaultDownloadLimits: DownloadLimits = {
  maxModelBytes: 256 * 2 ** 30,
  maxArchiveRatio: 200,
  maxArchiveEntries: 10_000,
  maxModelFiles: 10_000,
  minRate: { bytesPerSecond: 1024, windowMs: 60_000 },
  progressIntervalMs: 10_000,
};

/** The permanent `too-large` failure of `what`: `why`, naming the cap it passed as `names` calls it. */
export const tooLarge = (
  what: string,
  why: string,
  cap: CapField,
  names: CapNames | undefined,
): EffectError => permanentError('too-large', `${what}: too large: ${why} (${names?.[cap] ?? cap})`);

/** The retryable `timeout` failure of a transfer slower than `rate`, having moved `bytes` in its last window. */
export const tooSlow = (what: string, bytes: number, rate: MinRate): EffectError =>
  retryableError(
    'timeout',
    `${what} too slow: ${showBytes(bytes)} in the last ${rate.windowMs} ms, below ` +
      `${showBytes(rate.bytesPerSecond)}/s (${rate.name ?? 'minRate'})`,
  );
