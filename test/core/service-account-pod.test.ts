/** serviceAccountPod: the Pod a bound service account token names, read from its claims. */
import { serviceAccountPod } from '../../src/core/service-account-pod';

/** A JWT with `claims` (the signature is not read). */
const jwt = (claims: unknown): string =>
  ['{"alg":"RS256","kid":"k"}', JSON.stringify(claims)]
    .map((part) => Buffer.from(part).toString('base64url'))
    .concat('c2lnbmF0dXJl')
    .join('.');

// A pod name over 63 characters: the kubelet cuts the pod's hostname to 63 (KServe's predictor pods are such).
const longName = 'sklearn-iris-classifier-predictor-00001-deployment-7d9f8b6c4d-abcde';
const uid = '6f1c2d3e-0000-4000-8000-000000000001';

describe('serviceAccountPod', () => {
  it("takes the Pod's full name, namespace and uid from a bound token's kubernetes.io claim", () => {
    const token = jwt({
      aud: ['https://kubernetes.default.svc'],
      sub: 'system:serviceaccount:serving:default',
      'kubernetes.io': {
        namespace: 'serving',
        pod: { name: longName, uid },
        serviceaccount: { name: 'default', uid: '0b1c2d3e-0000-4000-8000-000000000002' },
      },
    });
    expect(serviceAccountPod(token)).toEqual({ name: longName, namespace: 'serving', uid });
  });

  it.each([
    ['a legacy Secret-based token (no pod claim)', jwt({ sub: 'system:serviceaccount:serving:default' })],
    ['no JWT', 'opaque-token'],
    ['a payload that is no JSON', `a.${Buffer.from('{').toString('base64url')}.c`],
    [
      'a pod name no API server allows',
      jwt({ 'kubernetes.io': { namespace: 'ns', pod: { name: 'A B', uid } } }),
    ],
  ])('names no Pod for %s', (_what, token) => {
    expect(serviceAccountPod(token)).toBeUndefined();
  });

  it('leaves out a uid that is no UUID', () => {
    const token = jwt({ 'kubernetes.io': { namespace: 'ns', pod: { name: 'pod-1', uid: '../x' } } });
    expect(serviceAccountPod(token)).toEqual({ name: 'pod-1', namespace: 'ns' });
  });
});
