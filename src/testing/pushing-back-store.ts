/**
 * pushingBack: a store handler in front of another that pushes back (503 SlowDown, as S3 answers, or 429) a request
 * past its limits: `allowed` answers at once (a store out of connections), and `perSecond` requests a second (a
 * token bucket of one second's requests, as S3 limits a prefix's request rate). It keeps when each request came and
 * whether it was pushed back.
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
  /** Answers at once before a request is pushed back (default: no limit). */
  readonly allowed?: number;
  /** Requests a second, in bursts of up to as many (default: no limit). */
  readonly perSecond?: number;
  /** Default 503. */
  readonly status?: 503 | 429;
  /** The Retry-After header of a push-back, if any (S3's SlowDown sends none). */
  readonly retryAfter?: string;
}

/** `inner` behind a limit of `options.allowed` answers at once. */
export const pushingBack = (
  inner: (request: IncomingMessage, response: ServerResponse) => void,
  { allowed = Infinity, perSecond = Infinity, status = 503, retryAfter }: PushingBackOptions,
): PushingBackStore => {
  const requests: StoreRequest[] = [];
  let answering = 0;
  let pushbacks = 0;
  let tokens = perSecond;
  let filledAt = performance.now();
  /** Takes a token of the bucket, refilled at `perSecond` up to a second's worth; false when it is empty. */
  const token = (): boolean => {
    const now = performance.now();
    tokens = Math.min(perSecond, tokens + ((now - filledAt) / 1000) * perSecond);
    filledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const pushedBack = answering >= allowed || !token();
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
