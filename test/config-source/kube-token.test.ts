/** The API server's bearer token from a file: trimmed (a trailing newline), refused with inner whitespace. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { User } from '@kubernetes/client-node';
import {
  tokenFileAuthenticator,
  tokenFileProvider,
  trimUserTokens,
} from '../../src/config-source/kube-token';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('kube-token');
const inCluster = (path: string): User => ({
  name: 'sa',
  authProvider: { name: tokenFileProvider, config: { path } },
});

describe('tokenFileAuthenticator', () => {
  it('claims only the in-cluster user it is made for', () => {
    expect(tokenFileAuthenticator.isAuthProvider(inCluster('/x'))).toBe(true);
    expect(
      tokenFileAuthenticator.isAuthProvider({ name: 'u', authProvider: { name: 'tokenFile', config: {} } }),
    ).toBe(false);
    expect(tokenFileAuthenticator.isAuthProvider({ name: 'u', token: 't' })).toBe(false);
  });

  it('sends the token of a file ending in a newline without it, read anew at each request', async () => {
    const file = join(tmp.path, 'token');
    await writeFile(file, 'sa-token-1\n');
    const opts: { headers?: Record<string, string> } = { headers: { Accept: 'application/json' } };
    await tokenFileAuthenticator.applyAuthentication(inCluster(file), opts);
    expect(opts.headers).toEqual({ Accept: 'application/json', Authorization: 'Bearer sa-token-1' });
    await writeFile(file, 'sa-token-2\r\n');
    await tokenFileAuthenticator.applyAuthentication(inCluster(file), opts);
    expect(opts.headers?.['Authorization']).toBe('Bearer sa-token-2');
  });

  it('refuses a token with whitespace inside, naming the file and never the token', async () => {
    const file = join(tmp.path, 'token');
    await writeFile(file, 'secret-half\nsecret-other-half\n');
    const opts: { headers?: Record<string, string> } = {};
    await expect(tokenFileAuthenticator.applyAuthentication(inCluster(file), opts)).rejects.toThrow(
      new Error(
        `the service account token file ${file} holds whitespace (U+000A) at character 12 of the token; it is not sent`,
      ),
    );
    expect(opts.headers).toBeUndefined();
  });

  it('names the kubeconfig user whose token file it reads, and refuses one over 64 KiB unread', async () => {
    const file = join(tmp.path, 'token');
    await writeFile(file, 'x'.repeat(64 * 1024 + 1));
    const user: User = {
      name: 'ci',
      authProvider: {
        name: tokenFileProvider,
        config: { path: file, label: 'the token file of kubeconfig user ci' },
      },
    };
    const opts: { headers?: Record<string, string> } = {};
    await expect(tokenFileAuthenticator.applyAuthentication(user, opts)).rejects.toThrow(
      new Error(`the token file of kubeconfig user ci ${file} is 65537 bytes, over 65536; it is not read`),
    );
    expect(opts.headers).toBeUndefined();
  });
});

describe('trimUserTokens', () => {
  it('trims each kubeconfig user token and leaves other users alone', () => {
    const config = {
      users: [
        { name: 'a', token: 'tok-a\n' },
        { name: 'b', certFile: '/c' },
      ] as User[],
    };
    trimUserTokens(config);
    expect(config.users).toEqual([
      { name: 'a', token: 'tok-a' },
      { name: 'b', certFile: '/c' },
    ]);
  });

  it('refuses a user token with a control character inside, naming the user', () => {
    const config = { users: [{ name: 'ci', token: 'secret\u0007x' }] as User[] };
    expect(() => trimUserTokens(config)).toThrow(
      'the token of kubeconfig user ci holds a control character (U+0007) at character 7 of the token; it is not sent',
    );
  });
});
