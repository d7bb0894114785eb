/** kubeFailureOf: what a failed list, watch or Event write says, whichever error it failed with. */
import { describeKubeFailure } from '../../src/core/config-map';
import { kubeFailureOf, KubeStatusError } from '../../src/config-source/kube-request';

const said = (cause: unknown): string => describeKubeFailure(kubeFailureOf(cause));

describe('kubeFailureOf', () => {
  it('takes the status, and whom the server refused, from a KubeStatusError', () => {
    const refused = new KubeStatusError('Forbidden', {
      status: 403,
      anonymous: false,
      user: 'system:serviceaccount:serving:agent',
    });
    expect(kubeFailureOf(refused)).toEqual({
      status: 403,
      anonymous: false,
      user: 'system:serviceaccount:serving:agent',
    });
    expect(said(new KubeStatusError('Unauthorized', { status: 401, anonymous: true }))).toMatch(/credential/);
  });

  it('says a file read before the request (a token file gone) by its message, not as a network error', () => {
    const gone = Object.assign(new Error("ENOENT: no such file or directory, stat '/sa/token'"), {
      code: 'ENOENT',
    });
    expect(said(gone)).toBe("the request failed: ENOENT: no such file or directory, stat '/sa/token'");
  });

  it('says a network error by its code when fetch wraps it in "fetch failed", as it does every one', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    expect(said(new TypeError('fetch failed', { cause: refused }))).toBe(
      'cannot reach the API server (ECONNREFUSED)',
    );
  });

  it("says a silent watch's timeout in words, not as the DOMException's numeric code taken for a status", () => {
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    expect(said(timeout)).toBe('the request failed: The operation was aborted due to timeout');
  });
});
