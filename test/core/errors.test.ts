/** Tests of the EffectError classifiers in core: HTTP statuses and errors no edge classified. */
import {
  EffectError,
  httpStatusError,
  isRetryableStatus,
  permanentError,
  retryAfterOf,
  toEffectError,
} from '../../src/core/errors';

describe('httpStatusError', () => {
  it.each([
    [408, true],
    [425, true],
    [429, true],
    [500, true],
    [503, true],
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [409, false],
  ])('makes %i an http-status error, retryable: %s', (status, retryable) => {
    expect(isRetryableStatus(status)).toBe(retryable);
    expect(httpStatusError('GET x', status)).toMatchObject({ kind: 'http-status', status, retryable });
  });

  it('quotes the first 300 characters of the body, trimmed', () => {
    expect(httpStatusError('GET x', 503, '  busy  ').message).toBe('GET x returned HTTP 503: busy');
    expect(httpStatusError('GET x', 503, 'y'.repeat(1000)).message).toHaveLength(
      'GET x returned HTTP 503: '.length + 300,
    );
    expect(httpStatusError('GET x', 404).message).toBe('GET x returned HTTP 404');
  });
});

describe('toEffectError', () => {
  it('passes an EffectError through', () => {
    const error = permanentError('not-found', 'gone');
    expect(toEffectError(error)).toBe(error);
  });

  it('makes an abort a retryable aborted error', () => {
    const controller = new AbortController();
    controller.abort();
    let abort: unknown;
    try {
      controller.signal.throwIfAborted();
    } catch (cause) {
      abort = cause;
    }
    expect(toEffectError(abort)).toMatchObject({ kind: 'aborted', retryable: true, cause: abort });
  });

  it.each([new Error('boom'), 'boom', { message: 'boom' }])('makes %p a retryable unknown error', (cause) => {
    const error = toEffectError(cause);
    expect(error).toBeInstanceOf(EffectError);
    expect(error).toMatchObject({ kind: 'unknown', retryable: true, message: 'boom' });
  });
});

describe('retryAfterOf', () => {
  const now = Date.parse('2026-12-05T12:00:00Z');
  it.each([
    ['120', 120_000],
    [' 0 ', 0],
    ['Sat, 05 Dec 2026 12:00:30 GMT', 30_000],
    ['Sat, 05 Dec 2026 11:00:00 GMT', 0],
    ['', undefined],
    ['-5', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['99999999999', undefined],
  ])('reads %j as %j ms', (header, ms) => {
    expect(retryAfterOf(header, now)).toBe(ms);
  });

  it('is read from a status answer into httpStatusError', () => {
    expect(httpStatusError('GET x', 429, '', 5000)).toMatchObject({
      status: 429,
      retryAfterMs: 5000,
      retryable: true,
    });
  });
});
