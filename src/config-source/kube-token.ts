/** The bearer token the API server gets, as a token file holds it: trimmed, and refused when it cannot be one. */
import type { KubeConfig, User } from '@kubernetes/client-node';
import type { OutgoingHttpHeaders } from 'node:http';
import { readFile } from 'node:fs/promises';
import { isLeft } from 'fp-ts/Either';
import { bearerToken } from '../core/bearer-token';

/** The auth provider's name in the in-cluster user: no authenticator of the client claims it. */
export const tokenFileProvider = 'modelsync-token-file';

/** The part of what `KubeConfig.addAuthenticator` takes that is used here (the client exports no interface). */
interface Authenticator {
  isAuthProvider(user: User): boolean;
  applyAuthentication(user: User, opts: { headers?: OutgoingHttpHeaders | readonly string[] }): Promise<void>;
}

/** The in-cluster user's provider (the client types it `any`). */
const providerOf = (user: User): { name?: unknown; config?: { path?: unknown } } | undefined =>
  user.authProvider as { name?: unknown; config?: { path?: unknown } } | undefined;

/** `text` as a token, or an Error saying what of `where` is wrong with it (never quoting it). */
const checked = (text: string, where: string): string => {
  const token = bearerToken(text);
  if (isLeft(token)) throw new Error(`${where} ${token.left}; it is not sent`);
  return token.right;
};

/**
 * The service account's projected token, read at every request (a rotated token is used at once; the file is
 * small and requests are few) and trimmed. The client's own `tokenFile` provider sends the file as it is: a
 * trailing newline (`kubectl create secret --from-file`, `echo`) made every request throw on the header.
 */
export const tokenFileAuthenticator: Authenticator = {
  isAuthProvider: (user: User) => providerOf(user)?.name === tokenFileProvider,
  applyAuthentication: async (user, opts) => {
    const file = String(providerOf(user)?.config?.path);
    const token = checked(await readFile(file, 'utf8'), `the service account token file ${file}`);
    opts.headers = { ...(opts.headers as OutgoingHttpHeaders | undefined), Authorization: `Bearer ${token}` };
  },
};

/**
 * The kubeconfig's users with each `token` (a `token-file` is read into it when the kubeconfig is loaded)
 * trimmed; throws, naming the user, when one cannot be a token, so the attempt fails clearly and is retried.
 */
export const trimUserTokens = (config: Pick<KubeConfig, 'users'>): void => {
  config.users = config.users.map((user) =>
    user.token === undefined || user.token === ''
      ? user
      : { ...user, token: checked(user.token, `the token of kubeconfig user ${user.name}`) },
  );
};
