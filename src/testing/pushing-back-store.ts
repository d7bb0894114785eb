/**
 * pushingBack: a store handler in front of another that answers at most `allowed` requests at once, and every
 * request past them with a push-back (503 SlowDown, as S3 answers, or 429), as a store's request-rate limit does.
 * It keeps when each request came and whether it was pushed back.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** One request the store got. */
export interface StoreRequest {
  /** `performance.now()` when it came. */
  readonly at: number;
  readonly pushedBack: boolean;
}

/** The handler and what it saw. */
export interface PushingBackStore {
  readonly handle: (request: IncomingMessage, response: ServerResponse) => void;
  readonly requests: ReadonlyArray<StoreRequest>;
  /** Requests it pushed back so far. */
  readonly pushbacks: () => number;
}

export interface PushingBackOptions {
  /** Answers at once before a request is pushed back. */
  readonly allowed: number;
  /** Default 503. */
  readonly status?: 503 | 429;
  /** The Retry-After header of a push-back, if any (S3's SlowDown sends none). */
  readonly retryAfter?: string;
}

/** `inner` behind a limit of `options.allowed` answers at once. */
export const pushingBack = (
  inner: (request: IncomingMessage, response: ServerResponse) => void,
  { allowed, status = 503, retryAfter }: PushingBackOptions,
): PushingBackStore => {
  const requests: StoreRequest[] = [];
  let answering = 0;
  let pushbacks = 0;
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const pushedBack = answering >= allowed;
    requests.push({ at: performance.now(), pushedBack });
    if (pushedBack) {
      pushbacks++;
      const body = status === 503 ? 'SlowDown: Please reduce your request rate.' : 'Too Many Requests';
      response.writeHead(status, retryAfter === undefined ? {} : { 'retry-after': retryAfter }).end(body);
      return;
    }
    answering++;
    response.on('close', () => answering--);
    inner(request, response);
  };
  return { handle, requests, pushbacks: () => pushbacks };
};
