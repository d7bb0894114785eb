/** Tests of s3Error: what each SDK failure becomes (kind, retryable, status) and that its message names the request. */
import { NoSuchBucket, S3ServiceException } from '@aws-sdk/client-s3';
import { EffectError } from '../../../src/core/errors';
import { s3Error } from '../../../src/storage/object-store/s3-errors';

const what = 's3://models/m1: reading m1/model.bin from bucket models';
const live = new AbortController().signal;

/** The exception the SDK throws for an S3 error answer with `code` and `status`. */
const answer = (code: string, status: number, message = `${code} happened`) =>
  new S3ServiceException({
    name: code,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message,
  });

describe('s3Error', () => {
  it.each([
    ['NoSuchBucket', 404, 'not-found', false],
    ['NoSuchKey', 404, 'not-found', false],
    ['AccessDenied', 403, 'http-status', false],
    ['InvalidAccessKeyId', 403, 'http-status', false],
    ['SignatureDoesNotMatch', 403, 'http-status', false],
    ['InvalidToken', 400, 'http-status', false],
    ['SlowDown', 503, 'http-status', true],
    ['ServiceUnavailable', 503, 'http-status', true],
    ['InternalError', 500, 'http-status', true],
    ['TooManyRequests', 429, 'http-status', true],
    ['RequestTimeout', 400, 'http-status', true],
    ['RequestTimeTooSkewed', 403, 'http-status', true],
    ['ExpiredToken', 400, 'http-status', true],
    ['InvalidArgument', 400, 'http-status', false],
  ])('classifies %s (HTTP %i) as %s, retryable %s', (code, status, kind, retryable) => {
    const error = s3Error(answer(code, status), { what, signal: live });
    expect(error).toMatchObject({ kind, retryable, status });
    expect(error.message).toBe(`${what}: ${code}: ${code} happened (HTTP ${status})`);
  });

  it('takes the SDK’s own exception classes as they come (NoSuchBucket)', () => {
    const error = s3Error(
      new NoSuchBucket({
        $metadata: { httpStatusCode: 404 },
        message: 'The specified bucket does not exist',
      }),
      { what, signal: live },
    );
    expect(error).toMatchObject({ kind: 'not-found', retryable: false, status: 404 });
    expect(error.message).toContain('NoSuchBucket: The specified bucket does not exist (HTTP 404)');
  });

  it.each([
    ['NoSuchKey', 404],
    ['PreconditionFailed', 412],
    ['InvalidRange', 416],
  ])('reads %s of a listed object as `changed`: list again and retry', (code, status) => {
    const error = s3Error(answer(code, status), { what, signal: live, listed: true });
    expect(error).toMatchObject({ kind: 'changed', retryable: true, status });
    expect(error.message).toContain('it changed since it was listed');
  });

  it('reads a failure without an answer as the transport’s: timeout, lost connection, abort', () => {
    const timeout = Object.assign(new Error('socket timed out after 60000 ms of inactivity'), {
      name: 'TimeoutError',
    });
    expect(s3Error(timeout, { what, signal: live })).toMatchObject({ kind: 'timeout', retryable: true });
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const lost = s3Error(reset, { what, signal: live, inBody: true });
    expect(lost).toMatchObject({ kind: 'network', retryable: true });
    expect(lost.message).toBe(`${what}: connection lost: read ECONNRESET`);
    const refused = s3Error(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      {
        what,
        signal: live,
      },
    );
    expect(refused.message).toBe(`${what} failed: connect ECONNREFUSED 127.0.0.1:9`);
    const controller = new AbortController();
    controller.abort();
    expect(s3Error(new Error('Request aborted'), { what, signal: controller.signal })).toMatchObject({
      kind: 'aborted',
      retryable: true,
    });
  });

  it('fails for good, pointing at --s3-anonymous, when the credential chain found nothing', () => {
    const none = Object.assign(new Error('Could not load credentials from any providers'), {
      name: 'CredentialsProviderError',
    });
    const error = s3Error(none, { what, signal: live });
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('a public bucket needs --s3-anonymous');
  });

  it('passes an EffectError on unchanged', () => {
    const original = new EffectError('already classified', true, { kind: 'changed' });
    expect(s3Error(original, { what, signal: live })).toBe(original);
  });
});
