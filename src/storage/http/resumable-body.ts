/** resumableBody: an HTTP response body that picks up where a cut left it, with `Range` and `If-Range`, as one stream. */
import type { IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { EffectError, retryableError } from '../../core/errors';
import { discardBody, headerOf, isOk, responseStatusError, type ResponseBody } from '../../net';
import type { StorePressure } from '../store-pressure';

/** The part of a response a resume looks at. */
export interface BodyResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: ResponseBody;
  /** The URL that answered, after redirects (httpGet sets it): a credential went there only if it is the endpoint. */
  readonly url?: URL;
}

/** How a cut body is resumed. */
export interface ResumeOptions {
  /** Names the transfer in messages. */
  readonly what: string;
  /** The transfer's own signal: once aborted, a failure is final, never resumed. */
  readonly signal: AbortSignal;
  /** Requests the resource again with these extra headers (`Range`, `If-Range`) on `signal`, redirects followed. */
  readonly reopen: (headers: Readonly<Record<string, string>>, signal: AbortSignal) => Promise<BodyResponse>;
  /** Resumes in a row that may each bring less than `progressBytes` before the transfer fails. */
  readonly maxResumes: number;
  /** The push-back state of the URL's origin: a resume asks through it, a push-back waited out and asked again. */
  readonly pressure: StorePressure;
}

// Bytes a resumed body must bring for the count of resumes to start again.
const progressBytes = 2 ** 20;
// Pause before a resume, times the number of resumes in a row: a server restarting gets time.
const pauseMs = 100;

/** The body size a response announces, when it has a usable Content-Length. */
export const contentLengthOf = (headers: IncomingHttpHeaders): number | undefined => {
  const text = headerOf(headers, 'content-length');
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
};

// RFC 9110 §8.8.2.2: a client may take a Last-Modified date as strong only this long before the answer's Date.
const strongDateMs = 60_000;

/**
 * What `If-Range` can carry for this response: a strong ETag, else its Last-Modified date when that is strong (RFC
 * 9110 §13.1.5 allows no weak validator there): at least 60 s before the answer's Date (§8.8.2.2), as a file written
 * within that may be written again in the same second, under the same one-second date. Undefined otherwise, and
 * then a cut body cannot be resumed safely, nor fetched in ranges.
 */
export const validatorOf = (headers: IncomingHttpHeaders): string | undefined => {
  const etag = headerOf(headers, 'etag');
  if (etag !== undefined && !etag.startsWith('W/')) return etag;
  const lastModified = headerOf(headers, 'last-modified');
  const [modified, sent] = [lastModified, headerOf(headers, 'date')].map((text) =>
    text === undefined ? NaN : Date.parse(text),
  );
  return sent! - modified! >= strongDateMs ? lastModified : undefined;
};

/** `Content-Range: bytes <first>-<last>/<total|*>`, parsed. */
export const contentRangeOf = (
  headers: IncomingHttpHeaders,
): { first: number; last: number; total?: number } | undefined => {
  const match = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(headerOf(headers, 'content-range')?.trim() ?? '');
  if (match === null) return undefined;
  return {
    first: Number(match[1]),
    last: Number(match[2]),
    ...(match[3] !== '*' ? { total: Number(match[3]) } : {}),
  };
};

/** Failures of the body that a new ranged request may get past: not ours (an abort, a cap), the connection's. */
const isResumable = (cause: unknown, signal: AbortSignal): boolean =>
  !signal.aborted && !(cause instanceof EffectError);

/**
 * The bytes of `first` (a 200), and after a cut the rest from ranged requests pinned to its validator, as one stream
 * (docs/storage.md, "Resume"). Without a validator, or after `maxResumes` resumes in a row that brought little, the
 * body's own failure is rethrown.
 */
export async function* resumableBody(
  first: BodyResponse,
  options: ResumeOptions,
): AsyncGenerator<Uint8Array> {
  const { signal, maxResumes, pressure } = options;
  const validator = validatorOf(first.headers);
  // The file's size: the first answer's Content-Length, else the total a resume's Content-Range names.
  let total = contentLengthOf(first.headers);
  let offset = 0;
  let body: BodyResponse['body'] | undefined = first.body;
  let resumesInARow = 0;
  let sinceResume = 0;
  for (;;) {
    try {
      if (body === undefined) {
        await sleep(pauseMs * resumesInARow, undefined, { signal });
        sinceResume = 0;
        const expected = { offset, first: first.headers, total };
        const resumed = await pressure.askThroughPushbacks(signal, () =>
          reopened(options, expected, resumesInARow),
        );
        ({ body } = resumed);
        total ??= resumed.total;
      }
      // undici's body is a byte stream; its typings leave the chunk type open.
      for await (const chunk of body as AsyncIterable<Uint8Array>) {
        offset += chunk.byteLength;
        sinceResume += chunk.byteLength;
        yield chunk;
      }
      // A resume that ended short of (or ran past) the size the answers named would save a cut file as whole.
      if (total !== undefined && offset !== total) {
        throw retryableError(
          'changed',
          `${options.what}: the body ended at byte ${offset} of ${total}: the file changed on the server or it ` +
            'does not serve ranges; the download starts again',
        );
      }
      return;
    } catch (cause) {
      if (sinceResume >= progressBytes) resumesInARow = 0;
      if (validator === undefined || !isResumable(cause, signal) || resumesInARow >= maxResumes) throw cause;
      resumesInARow += 1;
      body = undefined;
    }
  }
}

const reopened = async (
  options: ResumeOptions,
  expected: { offset: number; first: IncomingHttpHeaders; total: number | undefined },
  resume: number,
): Promise<{ readonly body: BodyResponse['body']; readonly total: number | undefined }> => {
  const { offset, first, total } = expected;
  const validator = validatorOf(first)!;
  const response = await options.reopen({ range: `bytes=${offset}-`, 'if-range': validator }, options.signal);
  // Another status than 200, 206 or 416 fails as the first request would.
  if (!isOk(response) && response.status !== 416) throw await responseStatusError(options.what, response);
  const answer = answeredRange(response, first);
  // Nothing was consumed yet: a whole body of the same version is as good as a range.
  const length = contentLengthOf(response.headers);
  const range =
    response.status === 200 && offset === 0
      ? { first: 0, last: length === undefined ? undefined : length - 1, total: length }
      : answer.range;
  if (
    range?.first === offset &&
    answer.sameVersion &&
    (total === undefined || range.total === total) &&
    // `bytes=<offset>-` asks for the rest: an answer of less (a server capping its ranges) would cut the file.
    (range.total === undefined || range.last === range.total - 1) &&
    (length === undefined || range.last === undefined || length === range.last - range.first + 1)
  ) {
    return { body: response.body, total: range.total };
  }
  throw await changedFile(
    response,
    `${options.what}: resume ${resume} from byte ${offset} was answered ${response.status}` +
      `${range !== undefined ? ` for bytes from ${range.first} of ${range.total ?? 'unknown'}` : ''}`,
  );
};

/** A response's Content-Encoding, `identity` when it names none. */
export const encodingOf = (headers: IncomingHttpHeaders): string =>
  headerOf(headers, 'content-encoding')?.trim().toLowerCase() || 'identity';

/**
 * The range a ranged answer carries (a 206's Content-Range), and how it is not of the representation the first
 * answer (`first`, its headers) began, if it is not: the validator If-Range carried (the strong ETag, or the
 * Last-Modified date) must be the answer's where it names one, as a server that ignores If-Range still tells its
 * version; and its Content-Encoding must be the first's (a range of a gzipped body is no range of the file).
 */
export const answeredRange = (response: BodyResponse, first: IncomingHttpHeaders) => {
  const validator = validatorOf(first);
  const byEtag = validator === headerOf(first, 'etag');
  const name = byEtag ? 'ETag' : 'Last-Modified';
  const version = headerOf(response.headers, byEtag ? 'etag' : 'last-modified');
  const [encoding, firstEncoding] = [encodingOf(response.headers), encodingOf(first)];
  // Judged by Last-Modified, a weak ETag still tells a rewrite within the same second (RFC 9110 §8.8.3.2's weak
  // comparison: equal weak tags may be other bytes, but different ones are surely other bytes).
  const [etag, firstEtag] = [headerOf(response.headers, 'etag'), headerOf(first, 'etag')];
  const weak = (tag: string): string => tag.replace(/^W\//, '');
  const mismatch =
    version !== undefined && version !== validator
      ? `of ${name} ${version}, not ${validator}`
      : !byEtag && etag !== undefined && firstEtag !== undefined && weak(etag) !== weak(firstEtag)
        ? `of ETag ${etag}, not ${firstEtag}`
        : encoding !== firstEncoding
          ? `with Content-Encoding ${encoding}, not ${firstEncoding}`
          : undefined;
  return {
    range: response.status === 206 ? contentRangeOf(response.headers) : undefined,
    /** How the answer is of another representation, for the message; undefined when it is the same. */
    mismatch,
    sameVersion: mismatch === undefined,
  };
};

/** How a ranged read of `[start, end)` was answered otherwise, for its failure's message. */
export const rangeAnswered = (
  what: string,
  [start, end]: readonly [number, number],
  status: number,
  range: ReturnType<typeof contentRangeOf>,
): string =>
  `${what}: bytes ${start}-${end - 1} were answered ${status}` +
  `${range !== undefined ? ` with bytes ${range.first}-${range.last} of ${range.total ?? 'unknown'}` : ''}`;

/** Drops `response`'s body and makes the retryable `changed` failure, `answered` saying what was asked and got. */
export const changedFile = async (response: BodyResponse, answered: string): Promise<EffectError> => {
  await discardBody(response);
  return retryableError(
    'changed',
    `${answered}: the file changed on the server or it does not serve ranges; the download starts again`,
  );
};
