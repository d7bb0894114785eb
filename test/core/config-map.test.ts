/** The ConfigMap source's pure parts: path and selector, the watch query and stall bound, a version read as text, failures in words. */
import { either as E } from 'fp-ts';
import {
  configMapSelector,
  configMapsPath,
  configMapText,
  describeKubeFailure,
  namesAnonymousUser,
  refusedUser,
  stallMsFor,
  watchQuery,
} from '../../src/core/config-map';
import { describeConfigError } from '../../src/core/errors';

const ref = { namespace: 'serving', name: 'models', key: 'models.json' };
const text = (configMap: Parameters<typeof configMapText>[1], maxBytes = 1000): string =>
  E.match(
    describeConfigError,
    (value: string) => `text: ${value}`,
  )(configMapText(ref, configMap, { maxBytes, limit: '--max-config-bytes' }));

describe('the ConfigMap as a config source', () => {
  it('asks for exactly one ConfigMap, with bookmarks and a server-side timeout', () => {
    expect(configMapsPath('serving')).toBe('/api/v1/namespaces/serving/configmaps');
    expect(configMapSelector('models')).toBe('metadata.name=models');
    expect(watchQuery(300)).toEqual({ allowWatchBookmarks: true, timeoutSeconds: 300 });
  });

  it.each([
    [1, 2000],
    [10, 20_000],
    [300, 330_000],
  ])('counts a watch asked to end after %i s as stalled after %i ms without progress', (seconds, ms) => {
    expect(stallMsFor(seconds)).toBe(ms);
  });

  it.each([
    ['the key', { data: { 'models.json': '[]' } }, 'text: []'],
    ['the key, as UTF-8 binaryData', { binaryData: { 'models.json': btoa('[1]') } }, 'text: [1]'],
    // kubectl create configmap --from-file keeps a Windows editor's BOM in data; the mounted file drops it too.
    ['the key with a byte-order mark, which is dropped', { data: { 'models.json': '\ufeff[]' } }, 'text: []'],
    [
      'binaryData with a byte-order mark, which is dropped',
      { binaryData: { 'models.json': btoa('\xef\xbb\xbf[1]') } },
      'text: [1]',
    ],
    [
      'a ConfigMap that does not exist',
      undefined,
      'cannot read configmap serving/models key models.json: the ConfigMap does not exist',
    ],
    [
      'a ConfigMap without the key',
      { data: { other: '[]' } },
      'cannot read configmap serving/models key models.json: the ConfigMap has no key models.json',
    ],
    [
      'a value over the limit',
      { data: { 'models.json': 'é'.repeat(600) } },
      'configmap serving/models key models.json is 1200 bytes, over the limit of 1000 bytes (--max-config-bytes); it was not read',
    ],
    [
      'binaryData that is not text',
      { binaryData: { 'models.json': btoa('[\u00e9]') } },
      'configmap serving/models key models.json is not valid UTF-8 text (byte 0xE9 at offset 1; Latin-1 or Windows-1252?); models.json must be UTF-8: save it as UTF-8',
    ],
  ])('reads %s', (_what, configMap, expected) => {
    expect(text(configMap)).toBe(expected);
  });

  it.each([
    [{ status: 401 }, /refused the credentials \(401 Unauthorized\): check the service account token/],
    [{ status: 403 }, /403 Forbidden\): the Role must allow get, list and watch/],
    [
      { status: 403, anonymous: true },
      /^no credentials were sent \(the API server answered 403 Forbidden to an anonymous request\): check the kubeconfig user's token, tokenFile or client certificate, or in a pod the service account token file; the Role is not what refused it$/,
    ],
    [
      { status: 401, anonymous: true },
      /^no credentials were sent \(the API server answered 401 Unauthorized/,
    ],
    [
      { status: 403, user: 'system:serviceaccount:serving:stranger' },
      /^the API server forbade it to system:serviceaccount:serving:stranger \(403 Forbidden\): the Role bound to that user must allow get, list and watch on this ConfigMap \(resourceNames\)$/,
    ],
    [{ status: 404, anonymous: true }, /no such namespace or resource \(404 Not Found\)$/],
    [{ status: 500 }, /^the API server answered HTTP 500$/],
    [{ code: 'ECONNREFUSED' }, /^cannot reach the API server \(ECONNREFUSED\)$/],
    [{ message: 'x'.repeat(500) }, /^the request failed: x{200}$/],
    [{}, /^the request failed: no reason given$/],
  ])('describes the failure %j without quoting a request', (failure, expected) => {
    expect(describeKubeFailure(failure)).toMatch(expected);
  });

  // A real API server's answer to a list without credentials (anonymous auth on, RBAC refusing it).
  const anonymousForbidden = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message:
      'configmaps "models" is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "serving"',
    reason: 'Forbidden',
    details: { name: 'models', kind: 'configmaps' },
    code: 403,
  };
  it.each([
    ['a 403 for system:anonymous', anonymousForbidden, true],
    [
      'a 403 naming the user only in its details',
      { details: { causes: [{ message: 'user "system:anonymous"' }] } },
      true,
    ],
    [
      'a 403 for a service account',
      {
        ...anonymousForbidden,
        message: 'User "system:serviceaccount:serving:modelsync" cannot list resource',
      },
      false,
    ],
    ['a 401 without a user', { kind: 'Status', message: 'Unauthorized', code: 401 }, false],
    ['a message that is no string', { message: 42 }, false],
    ['no Status', undefined, false],
  ])('tells whether %s names the anonymous user', (_what, status, anonymous) => {
    expect(namesAnonymousUser(status)).toBe(anonymous);
  });

  it.each([
    [
      'a real 403 for a service account',
      {
        ...anonymousForbidden,
        message: anonymousForbidden.message.replace('anonymous', 'serviceaccount:serving:sa'),
      },
      'system:serviceaccount:serving:sa',
    ],
    [
      'a name with a space or a quote in it',
      { message: 'User "a b" cannot list; User "a\\"b" cannot' },
      undefined,
    ],
    ['a name over 128 characters', { message: `User "${'u'.repeat(129)}" cannot list` }, undefined],
    ['a message without a user', { message: 'Forbidden' }, undefined],
    ['no Status', undefined, undefined],
  ])('takes the refused user of %s only when it is a plain name', (_what, status, user) => {
    expect(refusedUser(status)).toBe(user);
  });
});
