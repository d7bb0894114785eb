/** A kubeconfig user as modelsync reads it: kubectl's keys, the token file under both spellings, refusals. */
import { tokenFileOf, userProblem } from '../../src/config-source/kubeconfig-user';

describe('userProblem', () => {
  it.each([
    ['a token', { token: 't' }],
    ["kubectl's tokenFile", { tokenFile: '/t' }],
    ["client-node's token-file", { 'token-file': '/t' }],
    ['both spellings naming the same file', { tokenFile: '/t', 'token-file': '/t' }],
    ['a client certificate and key as files', { 'client-certificate': 'c.pem', 'client-key': 'k.pem' }],
    [
      'a client certificate and key as data',
      { 'client-certificate-data': 'Yw==', 'client-key-data': 'aw==' },
    ],
    ['an exec plugin', { exec: { command: 'aws', apiVersion: 'client.authentication.k8s.io/v1' } }],
    ['impersonation with as, and extensions', { token: 't', as: 'someone', extensions: [] }],
    ['no keys at all (anonymous, as for kubectl)', {}],
    ['a credential beside a key kubectl does not know', { token: 't', 'x-note': 'mine' }],
  ])('accepts %s', (_what, user) => {
    expect(userProblem('u', user)).toBeUndefined();
  });

  it.each([
    [
      'an auth provider',
      { 'auth-provider': { name: 'oidc', config: { 'id-token': 'secret-id-token' } } },
      'kubeconfig user u: auth-provider: auth providers are not supported (kubectl itself replaced them with exec plugins): use an exec plugin, a token, a tokenFile or a client certificate',
    ],
    [
      'basic authentication',
      { username: 'admin', password: 'secret-password' },
      'kubeconfig user u: username: basic authentication is not supported (the API server dropped it in Kubernetes 1.19)',
    ],
    [
      'impersonated groups',
      { token: 't', 'as-groups': ['system:masters'] },
      'kubeconfig user u: as-groups: impersonation of groups is not supported (only `as`)',
    ],
    [
      'two different token files',
      { tokenFile: '/a', 'token-file': '/b' },
      'kubeconfig user u names two different token files (tokenFile and token-file): keep one',
    ],
    [
      'a client certificate without its key',
      { 'client-certificate': 'c.pem' },
      'kubeconfig user u has a client certificate without its key',
    ],
    [
      'a client key without its certificate',
      { 'client-key-data': 'aw==' },
      'kubeconfig user u has a client key without its certificate',
    ],
    [
      'only keys kubectl does not know (a misspelt token file)',
      { token_file: '/t', tokenfile: '/t' },
      'kubeconfig user u holds no credential modelsync reads (it has "token_file", "tokenfile"); it reads token, tokenFile (or token-file), client-certificate and client-key (or their -data) and exec',
    ],
  ])('refuses %s, naming the key and never a value', (_what, user, problem) => {
    expect(userProblem('u', user)).toBe(problem);
    expect(problem).not.toMatch(/secret/);
  });
});

describe('tokenFileOf', () => {
  it.each([
    ["kubectl's tokenFile", { tokenFile: 'tok' }, 'tok'],
    ["client-node's token-file", { 'token-file': 'tok' }, 'tok'],
    ['tokenFile before token-file', { tokenFile: 'a', 'token-file': 'b' }, 'a'],
    [
      'none when a token is given (it takes precedence, as client-go documents)',
      { token: 't', tokenFile: 'a' },
      undefined,
    ],
    ['none for an empty path', { tokenFile: '' }, undefined],
    ['none for a path that is no string', { tokenFile: 7 }, undefined],
  ])('finds %s', (_what, user, file) => {
    expect(tokenFileOf(user)).toBe(file);
  });
});
