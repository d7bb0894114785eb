/**
 * boundAzureAnswers: every answer the Azure SDK would read whole (a listing page, an error, a property read) read
 * first through readAnswer, bounded while it streams; only a download's bytes are left to the downloader.
 */
import type { Pipeline as CorePipeline, PipelinePolicy, PipelineResponse } from '@azure/core-rest-pipeline';
import type { Pipeline } from '@azure/storage-blob';
import type { MinRate } from '../download-limits';
import { answerTo, readAnswer, type AnswerBody } from '../store-answer';

// core-rest-pipeline's way of saying "every status": its HTTP client then hands each body over as a stream.
const everyStatus = Number.POSITIVE_INFINITY;

const streams = (codes: ReadonlySet<number> | undefined, status: number): boolean =>
  codes !== undefined && (codes.has(everyStatus) || codes.has(status));

/**
 * The policy: each request is sent asking for its body as a stream whatever its status; a body the caller did not
 * ask to stream (all but a download's 200 and 206) is read here with readAnswer and handed on as the text the SDK
 * would have read itself, so its parser and its error policies see what they always see.
 */
const boundedAnswers = (minRate: MinRate): PipelinePolicy => ({
  name: 'modelsyncBoundedAnswers',
  sendRequest: async (request, next) => {
    const asked = request.streamResponseStatusCodes;
    request.streamResponseStatusCodes = new Set([everyStatus]);
    let response: PipelineResponse;
    try {
      response = await next(request);
    } finally {
      request.streamResponseStatusCodes = asked;
    }
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
export const boundAzureAnswers = (pipeline: Pipeline, minRate: MinRate): void => {
  const core = (pipeline as unknown as { _corePipeline?: CorePipeline })._corePipeline;
  if (typeof core?.addPolicy !== 'function') {
    throw new Error(
      '@azure/storage-blob keeps no core pipeline on its Pipeline: its answers cannot be bounded',
    );
  }
  core.addPolicy(boundedAnswers(minRate), { afterPhase: 'Sign' });
};
