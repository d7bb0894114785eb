/** Tests of transportError: how a request that got no complete answer is classified and described. */
import { permanentError } from '../../src/core/errors';
import { transportError } from '../../src/net/transport-error';

const what = 'GET http://host/m';
// What undici throws: a bare TypeError whose cause chain holds the reason.
const fetchFailed = (cause: unknown): Error => new TypeError('fetch failed', { cause });
const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });

describe('transportError', () => {
  it('calls a request the caller aborted aborted, whatever reached the catch', () => {
    expect(transportError(fetchFailed(refused), { what, aborted: true })).toMatchObject({
      kind: 'aborted',
      retryable: true,
      message: `${what} aborted`,
    });
  });

  it('calls a request whose timeout fired a timeout, in the words given', () => {
    const error = transportError(new DOMException('x', 'AbortError'), {
      what,
      aborted: false,
      timeout: 'timed out after 5 ms',
    });
    expect(error).toMatchObject({
      kind: 'timeout',
      retryable: true,
      message: `${what} timed out after 5 ms`,
    });
  });

  it('passes an EffectError thrown on the way through', () => {
    const error = permanentError('refused', 'no');
    expect(transportError(error, { what, aborted: false })).toBe(error);
  });

  it('describes a network failure by its cause chain, without the empty "fetch failed"', () => {
    expect(transportError(fetchFailed(refused), { what, aborted: false })).toMatchObject({
      kind: 'network',
      retryable: true,
      message: `${what} failed: connect ECONNREFUSED 127.0.0.1:8000`,
    });
  });

  it('says the connection was lost when the body broke off', () => {
    const terminated = new TypeError('terminated', { cause: new Error('other side closed') });
    expect(transportError(terminated, { what, aborted: false, connectionLost: true }).message).toBe(
      `${what}: connection lost: terminated: other side closed`,
    );
  });

  it('makes a URL fetch can never use a permanent invalid-uri error', () => {
    const invalid = fetchFailed(Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL' }));
    expect(transportError(invalid, { what, aborted: false })).toMatchObject({
      kind: 'invalid-uri',
      retryable: false,
    });
  });

  it.each(['UND_ERR_HEADERS_OVERFLOW', 'HPE_HEADER_OVERFLOW'])(
    'makes an answer whose head is over the limit (%s) a permanent invalid-response',
    (code) => {
      const overflow = fetchFailed(Object.assign(new Error('Headers Overflow Error'), { code }));
      expect(transportError(overflow, { what, aborted: false })).toMatchObject({
        kind: 'invalid-response',
        retryable: false,
        message: `${what} failed: the answer's head (its status line and headers) is over the 16 KiB a client reads`,
      });
    },
  );

  it('stops following a cause chain that loops', () => {
    const a: { message: string; cause?: unknown } = { message: 'a' };
    a.cause = { message: 'b', cause: a };
    expect(transportError(a, { what, aborted: false }).message).toBe(`${what} failed: a: b: a: b: a`);
    expect(transportError('plain', { what, aborted: false }).message).toBe(`${what} failed: plain`);
  });
});
