/**
 * boundS3Answers: every answer the AWS SDK would read whole (a listing page, an error, HeadObject's empty body) read
 * first through readAnswer, bounded while it streams; only a GetObject's bytes are left to the downloader.
 */
import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import type { HttpRequest, HttpResponse } from '@smithy/types';
import type { MinRate } from '../download-limits';
import { answerTo, readAnswer, type AnswerBody } from '../store-answer';

const isBody = (body: unknown): body is AnswerBody =>
  typeof body === 'object' &&
  body !== null &&
  Symbol.asyncIterator in body &&
  typeof (body as { destroy?: unknown }).destroy === 'function';

const urlOf = (request: HttpRequest): string =>
  `${request.protocol}//${request.hostname}${request.port !== undefined ? `:${request.port}` : ''}${request.path}`;

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
