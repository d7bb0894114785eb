/**
 * execAuthenticator: a kubeconfig user's exec credential plugin (client-go's `users[].user.exec`), run as client-go
 * runs one that is not interactive, but bounded: no stdin, a deadline that kills it with its process group, its
 * output capped, one failure line naming it; its ExecCredential cached until its `expirationTimestamp`.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { KubeConfig, User } from '@kubernetes/client-node';
import { isLeft } from 'fp-ts/Either';
import { bearerToken } from '../core/bearer-token';
import type { Env } from '../core/env';
import { errorCode, errorMessage } from '../core/errors';
import { jsonObject } from '../core/json/json-object';
import { parseAnswerJson } from '../core/json/json';

/**
 * The auth provider's name in a user whose exec plugin modelsync runs (`clientUser` in kube-client.ts): the client's
 * own ExecAuth ran the plugin with no deadline, its stdin an open pipe and its output unbounded, so one hung plugin
 * held the watch's list and every Event write for good. Its config: `plugin` (the `exec` map) and `user` (its name).
 */
export const execProvider = 'modelsync-exec';

/** How long a plugin may take to write its credential (`aws eks get-token`, `gke-gcloud-auth-plugin`: a second or two). */
export const pluginTimeoutMs = 30_000;

/** The most read of a plugin's stdout: an ExecCredential with a client certificate and key is a few KiB. */
const maxStdoutBytes = 2 ** 20;

/** The most of a plugin's stderr kept, and shown in its failure (a line, never a whole log). */
const maxStderrChars = 300;

/** A credential a plugin gave: a bearer token, or a client certificate and key (PEM), and until when it holds. */
interface Credential {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  /** `Date.now()` past which it is run again; undefined: for the process's life, as client-go keeps it. */
  readonly expiresAt?: number;
}

/** The plugin as the kubeconfig names it: client-go's `ExecConfig`; `cluster`, its current cluster if it asked. */
interface Plugin {
  readonly command: string;
  readonly args: ReadonlyArray<string>;
  readonly env: Readonly<Record<string, string>>;
  readonly apiVersion: string | undefined;
  readonly cluster: Readonly<Record<string, unknown>> | undefined;
}

const providerConfigOf = (user: User): Readonly<Record<string, unknown>> | undefined => {
  const provider = jsonObject(user.authProvider);
  return provider?.['name'] === execProvider ? jsonObject(provider['config']) : undefined;
};

/** Whether `user` sends what an exec plugin gives (a token or a client certificate). */
export const usesExecPlugin = (user: User | null): boolean =>
  user !== null && providerConfigOf(user) !== undefined;

const strings = (value: unknown): value is ReadonlyArray<string> =>
  Array.isArray(value) && value.every((item) => typeof item === 'string');

/** The plugin the user's config names, or an Error saying what of it is wrong (naming keys, never values). */
const pluginOf = (config: Readonly<Record<string, unknown>>, who: string): Plugin => {
  const exec = jsonObject(config['plugin']) ?? {};
  const { command, args, env, apiVersion, interactiveMode } = exec;
  if (typeof command !== 'string' || command === '') throw new Error(`${who}: exec has no command`);
  // client-go refuses it too when its stdin is no terminal; run without one, the plugin would wait or fail its own way.
  if (interactiveMode === 'Always')
    throw new Error(
      `${who}: exec's interactiveMode is Always, which needs a terminal; modelsync runs its plugin without one (set IfAvailable or Never)`,
    );
  if (args !== undefined && args !== null && !strings(args))
    throw new Error(`${who}: exec's args is no list of strings`);
  const pairs = Array.isArray(env) ? env.map((entry) => jsonObject(entry) ?? {}) : [];
  if (
    (env !== undefined && env !== null && !Array.isArray(env)) ||
    pairs.some((pair) => typeof pair['name'] !== 'string' || typeof pair['value'] !== 'string')
  )
    throw new Error(`${who}: exec's env is no list of name and value strings`);
  return {
    command,
    args: strings(args) ? args : [],
    env: Object.fromEntries(pairs.map((pair) => [pair['name'] as string, pair['value'] as string])),
    apiVersion: typeof apiVersion === 'string' && apiVersion !== '' ? apiVersion : undefined,
    cluster: exec['provideClusterInfo'] === true ? (jsonObject(config['cluster']) ?? {}) : undefined,
  };
};

/**
 * The current cluster put beside the current user's plugin when it asks for it (`provideClusterInfo`), as client-go
 * gives it in `KUBERNETES_EXEC_INFO` (`spec.cluster`): after the CA file is read into `caData`.
 */
export const withExecClusterInfo = (config: KubeConfig): void => {
  const user = config.getCurrentUser();
  const cluster = config.getCurrentCluster();
  const provider = user === null ? undefined : providerConfigOf(user);
  if (user === null || cluster === null || provider === undefined) return;
  const info = {
    server: cluster.server,
    ...(cluster.caData === undefined ? {} : { 'certificate-authority-data': cluster.caData }),
    ...(cluster.tlsServerName === undefined ? {} : { 'tls-server-name': cluster.tlsServerName }),
    ...(cluster.skipTLSVerify === undefined ? {} : { 'insecure-skip-tls-verify': cluster.skipTLSVerify }),
    ...(cluster.proxyUrl === undefined ? {} : { 'proxy-url': cluster.proxyUrl }),
  };
  const authProvider = { name: execProvider, config: { ...provider, cluster: info } };
  config.users = config.users.map((other) => (other === user ? { ...user, authProvider } : other));
};

/** The credential in a plugin's stdout, or why there is none (never quoting a value). */
const credentialOf = (stdout: string, apiVersion: string | undefined): Credential | string => {
  let parsed: unknown;
  try {
    parsed = parseAnswerJson(stdout, (why) => new Error(why === 'no JSON' ? why : 'JSON nested too deep'));
  } catch (error) {
    return `wrote ${errorMessage(error)}`;
  }
  const fields = jsonObject(parsed);
  if (fields?.['kind'] !== 'ExecCredential') return 'wrote no ExecCredential';
  if (apiVersion !== undefined && fields['apiVersion'] !== apiVersion)
    return `wrote an ExecCredential of apiVersion ${JSON.stringify(fields['apiVersion'])?.slice(0, 80)}, not ${apiVersion} as the kubeconfig asks`;
  const status = jsonObject(fields['status']) ?? {};
  const { token, clientCertificateData: cert, clientKeyData: key, expirationTimestamp: expires } = status;
  const expiresAt = typeof expires === 'string' ? Date.parse(expires) : undefined;
  if (expires !== undefined && !Number.isFinite(expiresAt))
    return 'wrote an expirationTimestamp that is no time';
  const until = expiresAt === undefined ? {} : { expiresAt };
  if (typeof cert === 'string' && cert !== '' && typeof key === 'string' && key !== '')
    return { cert, key, ...until };
  if (typeof token !== 'string' || token === '')
    return 'wrote neither a token nor a client certificate and key';
  const checked = bearerToken(token);
  return isLeft(checked) ? `wrote a token that ${checked.left}` : { token: checked.right, ...until };
};

/**
 * Runs `plugin` once: stdin /dev/null (client-go's `interactiveMode: Never`), `KUBERNETES_EXEC_INFO` saying so, in
 * a process group of its own, killed with it past `timeoutMs` or past `maxStdoutBytes`; resolves with its credential.
 */
const runPlugin = (plugin: Plugin, env: Env, who: string, timeoutMs: number): Promise<Credential> =>
  new Promise((resolve, reject) => {
    const spec = { interactive: false, ...(plugin.cluster === undefined ? {} : { cluster: plugin.cluster }) };
    const info = { apiVersion: plugin.apiVersion, kind: 'ExecCredential', spec };
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(plugin.command, plugin.args, {
        env: { ...env, ...plugin.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (error) {
      // A NUL in the command, an argument or the env: Node's message quotes the value, which may be a secret.
      return reject(new Error(`${who} could not be run (${errorCode(error) ?? 'invalid command line'})`));
    }
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let settled = false;
    const settle = (outcome: Credential | string, kill: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The group: a shell script's own children (a `sleep`, a `curl`) would hold its pipes open.
      if (kill && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }
      child.stdout.destroy();
      child.stderr.destroy();
      if (typeof outcome !== 'string') resolve(outcome);
      else reject(new Error(`${who} ${outcome}`));
    };
    const timer = setTimeout(
      () => settle(`gave no credential within ${timeoutMs / 1000} s; it was killed`, true),
      timeoutMs,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.byteLength;
      if (stdoutBytes > maxStdoutBytes)
        settle(`wrote more than ${maxStdoutBytes} bytes; it was killed`, true);
      else stdout.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < maxStderrChars) stderr += chunk;
    });
    child.on('error', (error) => settle(`could not be run (${errorCode(error) ?? error.message})`, true));
    child.on('close', (code, signal) => {
      const said = stderr.replace(/\s+/g, ' ').trim().slice(0, maxStderrChars);
      if (code !== 0) {
        const how = code === null ? `was ended by ${signal ?? 'a signal'}` : `exited with code ${code}`;
        return settle(`${how}${said === '' ? '' : `: ${said}`}`, false);
      }
      settle(credentialOf(Buffer.concat(stdout).toString('utf8'), plugin.apiVersion), false);
    });
  });

/**
 * The credentials plugins gave, and the runs under way, by user and plugin: for the process, as client-go's cache,
 * since the KubeConfig is built anew after every failure. One run at a time per plugin: requests that need it wait
 * for the same run, so a hung plugin is one process until its deadline, never one per request.
 */
const cached = new Map<string, Credential>();
const running = new Map<string, Promise<Credential>>();

/** Forgets every credential a plugin gave (tests). */
export const forgetExecCredentials = (): void => cached.clear();

/**
 * Forgets the credential `user`'s plugin gave, which the API server refused (401): the next request runs the plugin
 * again, as client-go does; kept, a revoked or rotated token without an `expirationTimestamp` was sent for good.
 */
export const execCredentialRefused = (user: User | null): void => {
  if (user === null) return;
  for (const key of cached.keys()) if ((JSON.parse(key) as unknown[])[0] === user.name) cached.delete(key);
};

/** The part of `https.RequestOptions` an authenticator fills. */
interface AuthOptions {
  headers?: OutgoingHttpHeaders | readonly string[];
  cert?: unknown;
  key?: unknown;
}

/** The authenticator of users whose provider is `execProvider`, running plugins with `env` (the process's). */
export const execAuthenticator = (env: Env, timeoutMs = pluginTimeoutMs) => ({
  isAuthProvider: (user: User): boolean => providerConfigOf(user) !== undefined,
  applyAuthentication: async (user: User, opts: AuthOptions): Promise<void> => {
    const config = providerConfigOf(user) ?? {};
    const who = `kubeconfig user ${user.name}`;
    const plugin = pluginOf(config, who);
    const key = JSON.stringify([user.name, plugin]);
    let credential = cached.get(key);
    if (credential?.expiresAt !== undefined && credential.expiresAt <= Date.now()) credential = undefined;
    if (credential === undefined) {
      let run = running.get(key);
      if (run === undefined) {
        run = runPlugin(plugin, env, `the exec plugin ${plugin.command} of ${who}`, timeoutMs).finally(() =>
          running.delete(key),
        );
        running.set(key, run);
      }
      credential = await run;
      cached.set(key, credential);
    }
    if (credential.token !== undefined)
      opts.headers = {
        ...(opts.headers as OutgoingHttpHeaders | undefined),
        Authorization: `Bearer ${credential.token}`,
      };
    if (credential.cert !== undefined) [opts.cert, opts.key] = [credential.cert, credential.key];
  },
});
