/**
 * A kubeconfig user as modelsync reads it: kubectl's keys (client-go's `AuthInfo`), each credential it supports,
 * and a clear refusal of the rest, never a request that silently goes without credentials.
 */

/** The keys that carry a credential modelsync sends. */
const credentialKeys = [
  'token',
  'tokenFile', // kubectl's and client-go's spelling
  'token-file', // @kubernetes/client-node's
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'exec',
];

/** Keys kubectl knows that change nothing modelsync sends wrongly (`as`: impersonation, sent as a header). */
const harmlessKeys = ['as', 'extensions'];

/** Keys kubectl knows that modelsync does not support, and what to use instead. */
const refusedKeys: Readonly<Record<string, string>> = {
  'auth-provider':
    'auth providers are not supported (kubectl itself replaced them with exec plugins): use an exec plugin, a token, a tokenFile or a client certificate',
  username: 'basic authentication is not supported (the API server dropped it in Kubernetes 1.19)',
  password: 'basic authentication is not supported (the API server dropped it in Kubernetes 1.19)',
  'as-uid': 'impersonation of a uid is not supported (only `as`)',
  'as-groups': 'impersonation of groups is not supported (only `as`)',
  'as-user-extra': 'impersonation of user extras is not supported (only `as`)',
};

const has = (user: Readonly<Record<string, unknown>>, key: string): boolean =>
  user[key] !== undefined && user[key] !== null && user[key] !== '';

/**
 * Why modelsync will not use the kubeconfig user `name` (its `user` map), or undefined (the refusals are listed in
 * docs/operating.md, Config sources). A user with no keys at all is anonymous, as for kubectl. Names keys, never
 * values.
 */
export const userProblem = (name: string, user: Readonly<Record<string, unknown>>): string | undefined => {
  const who = `kubeconfig user ${name}`;
  const refused = Object.keys(refusedKeys).find((key) => has(user, key));
  if (refused !== undefined) return `${who}: ${refused}: ${refusedKeys[refused]}`;
  if (has(user, 'tokenFile') && has(user, 'token-file') && user['tokenFile'] !== user['token-file'])
    return `${who} names two different token files (tokenFile and token-file): keep one`;
  const certificate = has(user, 'client-certificate') || has(user, 'client-certificate-data');
  const key = has(user, 'client-key') || has(user, 'client-key-data');
  if (certificate !== key)
    return `${who} has a client ${certificate ? 'certificate without its key' : 'key without its certificate'}`;
  const unknown = Object.keys(user).filter(
    (k) => !credentialKeys.includes(k) && !harmlessKeys.includes(k) && has(user, k),
  );
  if (unknown.length > 0 && !credentialKeys.some((k) => has(user, k)))
    return (
      `${who} holds no credential modelsync reads (it has ${unknown.map((k) => JSON.stringify(k).slice(0, 60)).join(', ')}); ` +
      'it reads token, tokenFile (or token-file), client-certificate and client-key (or their -data) and exec'
    );
  return undefined;
};

/** The token file a user names (`tokenFile`, kubectl's key, or `token-file`), unless a `token` wins over it. */
export const tokenFileOf = (user: Readonly<Record<string, unknown>>): string | undefined => {
  // client-go's AuthInfo: "If both Token and TokenFile are present, Token takes precedence."
  if (has(user, 'token')) return undefined;
  const file = has(user, 'tokenFile') ? user['tokenFile'] : user['token-file'];
  return typeof file === 'string' && file !== '' ? file : undefined;
};
