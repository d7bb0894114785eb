/**
 * readAnswer: one answer of a store read whole while it streams, and bounded — a listing page, the Hub's revision, an
 * error body: any JSON or XML a store answers (never an object's bytes, which pass the model's TransferGuard).
 */
import { permanentError, type EffectError } from '../core/errors';
import { headerOf, responseStatusError } from '../net';
import type { BodyResponse } from './http/resumable-body';
import { redactUri } from '../core/redact';
import { showBytes } from '../core/show-bytes';
import type { MinRate } from './download-limits';
import { TransferGuard } from './transfer-guard';

/**
 * The most bytes one answer of a store may hold. The largest real ones are far below it: a page of 1,000 S3 keys is
 * about 300 KB, one of 5,000 Azure blobs with their properties about 7 MB at the longest names, the Hub's revision
 * answer names every file of the repo (a few MB for the largest).
 */
export const maxAnswerBytes = 16 * 2 ** 20;

/** One answer to read: what it answers, and how it may come. */
export interface StoreAnswer {
  /** The store and its request, for messages (`answerTo`). */
  readonly what: string;
  /** Its Content-Length header, if it has one: a size over the cap is refused before a byte is read. */
  readonly contentLength?: string | number | undefined;
  /** The slowest an answer may come (`--min-download-rate` over `--min-rate-window-ms`); absent or 0: no minimum. */
  readonly minRate?: MinRate | undefined;
  /** Default maxAnswerBytes. */
  readonly maxBytes?: number;
}

/** A response body as every client gives it: chunks, and a way to drop the connection under it. */
export type AnswerBody = AsyncIterable<Uint8Array> & { destroy(error?: Error): unknown };

/** How messages name an answer: `S3's answer to GET http://host:9000/bucket` (the URL redacted, its query left out). */
export const answerTo = (store: string, method: string, url: string | URL): string =>
  `${store}'s answer to ${method} ${redactUri(String(url))}`;

const tooLargeAnswer = (what: string, why: string, maxBytes: number, end: string): EffectError =>
  permanentError(
    'too-large',
    `${what}: too large: ${why} the ${showBytes(maxBytes)} one answer of a store may hold ` +
      `(a listing page of 1,000 objects is about 300 KiB); ${end}`,
  );

/**
 * The bytes of `body`, read as they stream: a Content-Length over the cap is refused unread, a body that passes it
 * fails on that chunk, dropped with the connection (`too-large`, permanent: the store would answer the same again);
 * one slower than `minRate` fails `timeout` (retryable), however it trickles. Other failures pass as they came.
 */
export const readAnswer = async (body: AnswerBody, answer: StoreAnswer): Promise<Buffer> => {
  const { what } = answer;
  const maxBytes = answer.maxBytes ?? maxAnswerBytes;
  const announced = Number(answer.contentLength ?? 0);
  if (Number.isFinite(announced) && announced > maxBytes) {
    body.destroy();
    throw tooLargeAnswer(what, `it announces ${showBytes(announced)}, more than`, maxBytes, 'not read');
  }
  let slow: EffectError | undefined;
  const guard = new TransferGuard({
    what,
    maxBytes: Number.MAX_SAFE_INTEGER,
    minRate: answer.minRate,
    onTooSlow: (error) => {
      slow = error;
      body.destroy(error);
    },
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of guard.count(body)) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        body.destroy();
        throw tooLargeAnswer(what, 'it goes on past', maxBytes, 'dropped there');
      }
      chunks.push(chunk);
    }
  } catch (cause) {
    throw slow ?? cause;
  }
  return Buffer.concat(chunks, size);
};

/** Error bodies only need their first words: more than this is not read, and says nothing. */
const maxErrorAnswerBytes = 64 * 1024;

/**
 * The text of an error answer (for its reason), read as readAnswer reads, at most 64 KiB; empty when it is longer,
 * slower than `minRate` or broken: the status already says what went wrong.
 */
export const errorAnswerText = (body: AnswerBody, answer: StoreAnswer): Promise<string> =>
  readAnswer(body, { ...answer, maxBytes: maxErrorAnswerBytes }).then(
    (bytes) => bytes.toString('utf8'),
    () => '',
  );

/**
 * The error a store's error answer `response` (to a request `what`) is, as responseStatusError makes it, its body read
 * as errorAnswerText reads it: held to `minRate`, so a trickle cannot hold the request; `scrub` takes out of its
 * words what the request carried (withoutValuesOf).
 */
export const answerStatusError = (
  what: string,
  response: BodyResponse,
  minRate: MinRate | undefined,
  scrub: (text: string) => string = (text) => text,
): Promise<EffectError> => {
  const contentLength = headerOf(response.headers, 'content-length');
  return responseStatusError(what, response, async (body) =>
    scrub(await errorAnswerText(body, { what, contentLength, minRate })),
  );
};
