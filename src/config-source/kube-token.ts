/** The bearer token the API server gets, as a token file holds it: trimmed, and refused when it cannot be one. */
import type { KubeConfig, User } from '@kubernetes/client-node';
import type { OutgoingHttpHeaders } from 'node:http';
import { isLeft } from 'fp-ts/Either';
import { sendableToken } from '../core/bearer-token';
import { readSmallFile } from '../fs';

/**
 * The auth provider's name in a user whose token modelsync reads from a file (the in-cluster user, a kubeconfig
 * user with `tokenFile` or `token-file`): no authenticator of the client claims it. Its config: `path`, and `label`,
 * what the file is called in an error (default: the service account token file).
 */
export const tokenFileProvider = 'modelsync-token-file';

/** The most read of a token file: a projected service account token is about 1 KiB, an OIDC ID token a few. */
const maxTokenFileBytes = 64 * 2 ** 10;

/** The part of what `KubeConfig.addAuthenticator` takes that is used here (the client exports no interface). */
interface Authenticator {
  isAuthProvider(user: User): boolean;
  applyAuthentication(user: User, opts: { headers?: OutgoingHttpHeaders | readonly string[] }): Promise<void>;
}

interface TokenFileProvider {
  readonly name?: unknown;
  readonly config?: { readonly path?: unknown; readonly label?: unknown };
}

/** The user's provider (the client types it `any`). */
const providerOf = (user: User): TokenFileProvider | undefined =>
  user.authProvider as TokenFileProvider | undefined;

/** `text` as a token, or an Error saying what of `where` is wrong with it (never quoting it). */
const checked = (text: string, where: string): string => {
  const token = sendableToken(text, where);
  if (isLeft(token)) throw new Error(token.left);
  return token.right;
};

/**
 * A token file's token (the service account's projected token, a kubeconfig's `tokenFile`), read at every request
 * (a rotated token is used at once; the file is small and requests are few), bounded (`maxTokenFileBytes`, a
 * regular file only) and trimmed. The client's own providers send the file as it is: a trailing newline (`kubectl
 * create secret --from-file`, `echo`) made every request throw on the header.
 */
export const tokenFileAuthenticator: Authenticator = {
  isAuthProvider: (user: User) => providerOf(user)?.name === tokenFileProvider,
  applyAuthentication: async (user, opts) => {
    const config = providerOf(user)?.config;
    const file = String(config?.path);
    const label = typeof config?.label === 'string' ? config.label : 'the service account token file';
    const bytes = await readSmallFile(file, maxTokenFileBytes, `${label} ${file}`, 'follow');
    const token = checked(bytes.toString('utf8'), `${label} ${file}`);
    opts.headers = { ...(opts.headers as OutgoingHttpHeaders | undefined), Authorization: `Bearer ${token}` };
  },
};

/**
 * The kubeconfig's users with each `token` trimmed; throws, naming the user, when one cannot be a token, so the
 * attempt fails clearly and is retried.
 */
export const trimUserTokens = (config: Pick<KubeConfig, 'users'>): void => {
  config.users = config.users.map((user) =>
    user.token === undefined || user.token === ''
      ? user
      : { ...user, token: checked(user.token, `the token of kubeconfig user ${user.name}`) },
  );
};
