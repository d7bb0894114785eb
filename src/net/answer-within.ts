/**
 * answerWithin: a request's final answer (status and headers) within a deadline from its sending, whatever comes
 * before it. The clients' own head timeouts restart with every byte or interim answer: a peer that drips its head,
 * or sends `103 Early Hints` without end, held a download for days (undici's headersTimeout, node:http's socket
 * timeout, the Azure SDK's server-side timeout alone).
 */
import { errors } from './undici-core';

/** Enough of an SDK's AbortSignal (a DOM one, or one only like it). */
export interface SignalLike {
  readonly aborted: boolean;
  addEventListener?: (type: 'abort', listener: () => void) => void;
}

/** A real AbortSignal for an SDK's. */
const signalOf = (given: SignalLike): AbortSignal => {
  if (given instanceof AbortSignal) return given;
  const controller = new AbortController();
  if (given.aborted) controller.abort();
  else given.addEventListener?.('abort', () => controller.abort());
  return controller.signal;
};

/**
 * `send(signal)` with `signal` aborted once `ms` pass before it settles (and when `outer` aborts). Then it rejects
 * with `timedOut(ms)` (default undici's HeadersTimeoutError, `UND_ERR_HEADERS_TIMEOUT`: every transport classifier
 * reads it as a timeout), whatever the client threw on the abort. What `send` resolves to (a body still streaming)
 * is not bounded by it.
 */
export const answerWithin = async <T>(
  ms: number,
  outer: SignalLike | undefined,
  send: (signal: AbortSignal) => Promise<T>,
  timedOut: (ms: number) => Error = (within) =>
    new errors.HeadersTimeoutError(`no answer within ${within} ms`),
): Promise<T> => {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(timedOut(ms)), ms);
  try {
    return await send(
      outer === undefined ? deadline.signal : AbortSignal.any([signalOf(outer), deadline.signal]),
    );
  } catch (cause) {
    throw deadline.signal.aborted && outer?.aborted !== true ? deadline.signal.reason : cause;
  } finally {
    clearTimeout(timer);
  }
};
