/**
 * boundS3Answers, boundAzureAnswers: every answer an SDK would read whole (a listing page, an error, S3's HeadObject,
 * Azure's property read) read first through readAnswer, bounded while it streams; only a download's bytes are left to
 * the downloader.
 */
import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Pipeline as CorePipeline, PipelinePolicy } from '@azure/core-rest-pipeline';
import type { Pipeline } from '@azure/storage-blob';
import type { HttpRequest, HttpResponse } from '@smithy/types';
import type { MinRate } from '../download-limits';
import { answerWithin } from '../../net';
import { answerTo, readAnswer, type AnswerBody } from '../store-answer';
import { urlOf } from './s3-range-handler';

const isBody = (body: unknown): body is AnswerBody =>
  typeof body === 'object' &&
  body !== null &&
  Symbol.asyncIterator in body &&
  typeof (body as { destroy?: unknown }).destroy === 'function';

/**
 * Adds to `client` the middleware that reads each answer but a GetObject's 2xx body with readAnswer (the cap of one
 * answer, `minRate`) and hands the SDK's parser the bytes it read. It sits in the deserialize step after the
 * parser (priority `low`), so it runs on the raw response before the parser collects it: the SDK reads a body
 * whole before any of our checks could see it, and a page that never ends took the process to 2.8 GiB. Its
 * failures are thrown outside the parser's catch, so they reach s3Error as they are, not dressed as parse errors,
 * and the SDK's retry leaves them alone (no status, no transient name).
 */
export const boundS3Answers = (client: S3Client, minRate: MinRate): void => {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const response = result.response as HttpResponse;
      const status = response.statusCode;
      const data = context.commandName === 'GetObjectCommand' && status >= 200 && status < 300;
      const body: unknown = response.body;
      if (data || !isBody(body)) return result;
      const request = args.request as HttpRequest;
      const bytes = await readAnswer(body, {
        what: answerTo('S3', request.method, urlOf(request)),
        contentLength: response.headers['content-length'],
        minRate,
      });
      response.body = Readable.from(bytes.length === 0 ? [] : [bytes], { objectMode: false });
      return result;
    },
    { step: 'deserialize', priority: 'low', name: 'modelsyncBoundedAnswers' },
  );
};

// core-rest-pipeline's way of saying "every status": its HTTP client then hands each body over as a stream.
const everyStatus = Number.POSITIVE_INFINITY;

const streams = (codes: ReadonlySet<number> | undefined, status: number): boolean =>
  codes !== undefined && (codes.has(everyStatus) || codes.has(status));

/**
 * The policy: each request is sent asking for its body as a stream whatever its status; a body the caller did not
 * ask to stream (all but a download's 200 and 206) is read here with readAnswer and handed on as the text the SDK
 * would have read itself, so its parser and its error policies see what they always see.
 */
const boundedAnswers = (minRate: MinRate, answerMs: number): PipelinePolicy => ({
  name: 'modelsyncBoundedAnswers',
  sendRequest: async (request, next) => {
    const asked = request.streamResponseStatusCodes;
    const callers = request.abortSignal;
    request.streamResponseStatusCodes = new Set([everyStatus]);
    // Its head within `answerMs` of its sending: the SDK's own timeout is the one it asks the server to keep.
    const response = await answerWithin(answerMs, callers, (signal) => {
      request.abortSignal = signal;
      return next(request);
    }).finally(() => {
      request.streamResponseStatusCodes = asked;
      request.abortSignal = callers;
    });
    const body = response.readableStreamBody;
    if (body === undefined || streams(asked, response.status)) return response;
    response.readableStreamBody = undefined;
    const bytes = await readAnswer(body as unknown as AnswerBody, {
      what: answerTo('Azure Blob', request.method, request.url),
      contentLength: response.headers.get('content-length'),
      minRate,
    });
    response.bodyAsText = bytes.toString('utf8');
    return response;
  },
});

/**
 * Adds the bounded-answers policy to the pipeline every client made from `pipeline` sends through, right next to the
 * HTTP client (after the Sign phase: inside the SDK's retry, its parser and its error policies), where a body is
 * still a stream. The SDK reads every body but a download's whole before any check of ours could see it; it offers
 * no option that places a policy there (`pipeline.factories` land before its parser), so the core pipeline it builds
 * at the first client and keeps on the Pipeline is reached directly. An SDK that keeps it elsewhere is a bug here,
 * said at once rather than an answer left unbounded.
 */
export const boundAzureAnswers = (pipeline: Pipeline, minRate: MinRate, answerMs: number): void => {
  const core = (pipeline as unknown as { _corePipeline?: CorePipeline })._corePipeline;
  if (typeof core?.addPolicy !== 'function') {
    throw new Error(
      '@azure/storage-blob keeps no core pipeline on its Pipeline: its answers cannot be bounded',
    );
  }
  core.addPolicy(boundedAnswers(minRate, answerMs), { afterPhase: 'Sign' });
};
