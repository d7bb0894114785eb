/**
 * saveBody: a 2xx body saved as one new file, in ranged parts over several connections when the server serves ranges
 * of a big file (pinned to the first answer's validator), else as one stream resumed after a cut.
 */
import { EffectError } from '../../core/errors';
import { writeNewFile } from '../../fs';
import { headerOf, withFailures } from '../../net';
import type { MinRate } from '../download-limits';
import { answerStatusError } from '../store-answer';
import type { StorePressure } from '../store-pressure';
import { fetchInParts, UntrustedBytes, type PartsSettings, type RangeReader } from '../parts/fetch-parts';
import { rangedThresholdBytes } from '../parts/part-plan';
import type { TransferGuard } from '../transfer-guard';
import type { Attempt } from './http-get';
import {
  answeredRange,
  changedFile,
  contentLengthOf,
  encodingOf,
  rangeAnswered,
  resumableBody,
  validatorOf,
  type BodyResponse,
  type ResumeOptions,
} from './resumable-body';

/** How bodies are saved: connections per file, the process-wide pool, resumes of a cut body or range. */
export type SaveSettings = Required<Pick<PartsSettings, 'streams' | 'maxResumes'>> &
  Pick<PartsSettings, 'pool'>;

/** One body to save. */
export interface SaveJob {
  readonly what: string;
  readonly to: string;
  readonly attempt: Attempt;
  /** The push-back state of the URL's origin. */
  readonly pressure: StorePressure;
  readonly guard: TransferGuard;
  readonly reopen: ResumeOptions['reopen'];
  /** The slowest an error answer to a range may come (no guard counts it: no byte of the file is read then). */
  readonly minRate: MinRate | undefined;
}

/**
 * The size of a body worth fetching in ranges: a 200 of at least `rangedThresholdBytes` with a Content-Length, a
 * server that says it serves byte ranges (`Accept-Ranges: bytes`) and a validator every range can be pinned to
 * (a strong ETag or Last-Modified); undefined otherwise, and the body is read as one stream.
 */
const rangedSizeOf = (response: BodyResponse, streams: number): number | undefined => {
  if (streams < 2 || response.status !== 200 || validatorOf(response.headers) === undefined) return undefined;
  if (encodingOf(response.headers) !== 'identity') return undefined;
  const size = contentLengthOf(response.headers);
  if (size === undefined || size < rangedThresholdBytes) return undefined;
  return /(^|,)\s*bytes\s*(,|$)/i.test(headerOf(response.headers, 'accept-ranges') ?? '') ? size : undefined;
};

// What a range can pick up from: the connection (undici's own errors), a stall, a server error. Never `changed`.
const resumableKinds = new Set(['network', 'timeout', 'http-status']);
const isResumable = (cause: unknown): boolean =>
  !(cause instanceof EffectError) || (cause.retryable && resumableKinds.has(cause.kind));

/** Reads `[start, end)` pinned to the first response's validator: only the 206 of exactly those bytes passes. */
const rangeReader = (job: SaveJob, first: BodyResponse, size: number): RangeReader => {
  const validator = validatorOf(first.headers)!;
  return async (start, end, signal) => {
    const response = await job.reopen({ range: `bytes=${start}-${end - 1}`, 'if-range': validator }, signal);
    if (response.status >= 500 || response.status === 429)
      throw await answerStatusError(job.what, response, job.minRate);
    const { range, mismatch, sameVersion } = answeredRange(response, first.headers);
    if (range?.first === start && range.last === end - 1 && range.total === size && sameVersion) {
      const body = job.attempt.watch(response.body);
      // Not framed by its length (chunked, say): a chunk size no server sends may have passed other bytes as data.
      return contentLengthOf(response.headers) === undefined
        ? withFailures(body, (cause) => new UntrustedBytes(cause))
        : body;
    }
    const answered = rangeAnswered(job.what, [start, end], response.status, range);
    throw await changedFile(response, `${answered}${mismatch !== undefined ? ` ${mismatch}` : ''}`);
  };
};

/** The body of `response` (a 2xx) as one stream resumed after a cut (resumableBody), counted on `job.guard`. */
export const wholeBody = (
  response: BodyResponse,
  job: Omit<SaveJob, 'to'>,
  maxResumes: number,
): AsyncIterable<Uint8Array> => {
  const { what, attempt, reopen, pressure } = job;
  const whole = resumableBody(response, { what, signal: attempt.signal, reopen, maxResumes, pressure });
  return job.guard.count(attempt.watch(whole));
};

/**
 * Saves `response` (a 2xx) as the new file `job.to`: in ranged parts when rangedSizeOf says so, its own body serving
 * the first range; else as wholeBody. Resolves to the file's size.
 */
export const saveBody = async (
  response: BodyResponse,
  job: SaveJob,
  settings: SaveSettings,
): Promise<number> => {
  const size = rangedSizeOf(response, settings.streams);
  const { what, to, attempt, guard } = job;
  if (size === undefined) {
    const body = wholeBody(response, job, settings.maxResumes);
    const announced = contentLengthOf(response.headers);
    return writeNewFile(body, to, attempt.signal, `${what}: cannot save ${to}`, announced);
  }
  const read = rangeReader(job, response, size);
  const first = attempt.watch(response.body);
  const { streams, pool, maxResumes } = settings;
  await fetchInParts(
    { what, size, to, read, signal: attempt.signal, guard, first, resumable: isResumable },
    { streams, pool, maxResumes, pressure: job.pressure },
  );
  return size;
};
