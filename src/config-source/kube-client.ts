/** The Kubernetes client, loaded at its first use, and the cluster settings it is given: in-cluster, or a kubeconfig. */
import type { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join, sep } from 'node:path';
import type { Env } from '../core/env';
import { errorCode } from '../core/errors';
import { jsonObject } from '../core/json/json-object';
import type { PodRef } from '../core/kube-event';
import { lazyModule } from '../core/lazy-module';
import { serviceAccountPod } from '../core/service-account-pod';
import { homeDir, readSmallFile } from '../fs';
import { execAuthenticator, execProvider, withExecClusterInfo } from './kube-exec';
import { tokenFileOf, userProblem } from './kubeconfig-user';
import { tokenFileAuthenticator, tokenFileProvider, trimUserTokens } from './kube-token';

/** The `@kubernetes/client-node` module (ESM-only: Node 24 `require`s it). */
export type KubeClientModule = typeof import('@kubernetes/client-node');

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first kube-api read (lazy-module.ts)
const clientModule = lazyModule(() => require('@kubernetes/client-node') as KubeClientModule);

/** The client module, loaded once (only `--source kube-api` needs it); a Promise, as the callers await it. */
export const kubeClient = (): Promise<KubeClientModule> => Promise.resolve().then(clientModule);

/** Where a pod's service account is mounted: `token`, `ca.crt`, `namespace`. */
const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** True when the cluster settings come from a kubeconfig (`KUBECONFIG` set, or not in a pod). */
const usesKubeconfig = (env: Env): boolean =>
  (env['KUBECONFIG'] ?? '') !== '' || (env['KUBERNETES_SERVICE_HOST'] ?? '') === '';

/** The most read of a kubeconfig (hundreds of clusters with their CAs inline fit) and of a PEM file it names. */
const maxKubeconfigBytes = 4 * 2 ** 20;
const maxPemBytes = 2 ** 20;

type Fields = Readonly<Record<string, unknown>>;

/**
 * The most a kubeconfig's values may add up to, each value 1 and each string its length besides: a 4 MiB file holds
 * far less unless YAML aliases repeat what they name (500 bytes of nested aliases are 387 million strings).
 */
const maxExpandedUnits = 4 * maxKubeconfigBytes;

/** Whether `value` adds up to more than `maxExpandedUnits`, counting each alias as often as it is used; stops there. */
const expandsTooFar = (value: unknown): boolean => {
  const pending: unknown[] = [value];
  let units = 0;
  while (pending.length > 0) {
    const next = pending.pop();
    units += 1 + (typeof next === 'string' ? next.length : 0);
    if (units > maxExpandedUnits) return true;
    if (typeof next === 'object' && next !== null)
      for (const inner of Array.isArray(next) ? next : Object.values(next)) pending.push(inner);
  }
  return false;
};

/**
 * An exec plugin's settings with its command as client-go runs it: a relative path (one with a `/`) is taken from the
 * kubeconfig's `dir` (a bare name is looked up in PATH); the client would run it from the process's working dir.
 */
const execFrom = (exec: unknown, dir: string): unknown => {
  const fields = jsonObject(exec);
  const command = fields?.['command'];
  if (typeof command !== 'string' || !command.includes(sep) || isAbsolute(command)) return exec;
  return { ...fields, command: join(dir, command) };
};

/**
 * A kubeconfig user as the client is given it: its token file (`tokenFile`, kubectl's key, or `token-file`,
 * client-node's, which the client would read whole, once, at load) becomes the provider modelsync reads at each
 * request (kube-token.ts), relative to `dir` as client-go resolves it; an exec plugin, the provider modelsync runs
 * bounded (kube-exec.ts), its command taken from `dir` too (`execFrom`).
 */
const clientUser = (name: string, user: Fields, dir: string): Fields => {
  const tokenFile = tokenFileOf(user);
  const { tokenFile: _kubectl, 'token-file': _client, exec, ...others } = user;
  const plugin = { name: execProvider, config: { plugin: execFrom(exec, dir), user: name } };
  const rest = exec === undefined || exec === null ? others : { ...others, 'auth-provider': plugin };
  if (tokenFile === undefined) return rest;
  const path = isAbsolute(tokenFile) ? tokenFile : join(dir, tokenFile);
  const config = { path, label: `the token file of kubeconfig user ${name}` };
  return { ...rest, 'auth-provider': { name: tokenFileProvider, config } };
};

const entriesOf = (value: unknown): Fields[] =>
  Array.isArray(value) ? value.map((entry) => jsonObject(entry) ?? {}) : [];

/**
 * The YAML `text` of the kubeconfig `file`, parsed by the client's loader; when it is no YAML, an Error naming the
 * file, the place and what the parser expected, never the lines around it (js-yaml's message quotes them, and a
 * kubeconfig's are its token and client key: they were logged at each retry and shown in /status).
 */
const yamlOf = (kube: KubeClientModule, text: string, file: string): unknown => {
  try {
    return kube.loadYaml(text);
  } catch (error) {
    const { reason, mark } = (error ?? {}) as {
      reason?: unknown;
      mark?: { line?: unknown; column?: unknown };
    };
    const why = typeof reason === 'string' ? reason.slice(0, 200) : 'it does not parse';
    const where =
      typeof mark?.line === 'number' && typeof mark.column === 'number'
        ? ` (line ${mark.line + 1}, column ${mark.column + 1})`
        : '';
    // Not the parser's error as the cause: its message quotes the lines, and a cause is logged with its error.
    // eslint-disable-next-line preserve-caught-error
    throw new Error(`the kubeconfig ${file} is no valid YAML: ${why}${where}`);
  }
};

/**
 * The kubeconfig `file`, read bounded and parsed by the client's own YAML loader, with each user through
 * `clientUser` and relative paths made absolute; and its users as written (for `userProblem`).
 */
const readKubeconfig = async (
  kube: KubeClientModule,
  file: string,
): Promise<{ readonly config: KubeConfig; readonly users: ReadonlyMap<string, Fields> }> => {
  const dir = dirname(file);
  const bytes = await readSmallFile(file, maxKubeconfigBytes, `the kubeconfig ${file}`, 'follow');
  const parsed = jsonObject(yamlOf(kube, bytes.toString('utf8'), file));
  if (parsed === undefined) throw new Error(`the kubeconfig ${file} is no YAML map`);
  // Before JSON.stringify below, which expands every alias: it held the event loop 30 s, or ran out of heap.
  if (expandsTooFar(parsed))
    throw new Error(
      `the kubeconfig ${file} expands to more than ${maxExpandedUnits} values and characters (YAML aliases repeating what they name); it is not read`,
    );
  const users = new Map<string, Fields>();
  const clientUsers = entriesOf(parsed['users']).map((entry) => {
    const user = jsonObject(entry['user']) ?? {};
    const name = typeof entry['name'] === 'string' ? entry['name'] : '';
    users.set(name, user);
    return { ...entry, user: clientUser(name, user, dir) };
  });
  const config = new kube.KubeConfig();
  config.loadFromString(JSON.stringify({ ...parsed, users: clientUsers }));
  config.makePathsAbsolute(dir);
  return { config, users };
};

const base64Of = async (file: string, what: string): Promise<string> =>
  (await readSmallFile(file, maxPemBytes, `${what} ${file}`, 'follow')).toString('base64');

/**
 * The current user's client certificate and key files and the current cluster's CA file read into `config`
 * (bounded, as inline data): the client would read them at every request, whole, without a bound.
 */
const inlineFiles = async (config: KubeConfig): Promise<void> => {
  const user = config.getCurrentUser();
  if (user !== null && (user.certFile !== undefined || user.keyFile !== undefined)) {
    const { certFile, keyFile, ...rest } = user;
    const read = {
      ...rest,
      ...(certFile === undefined ? {} : { certData: await base64Of(certFile, 'the client certificate') }),
      ...(keyFile === undefined ? {} : { keyData: await base64Of(keyFile, 'the client key') }),
    };
    config.users = config.users.map((other) => (other === user ? read : other));
  }
  const cluster = config.getCurrentCluster();
  if (cluster?.caFile !== undefined) {
    const { caFile, ...rest } = cluster;
    const read = { ...rest, caData: await base64Of(caFile, "the cluster's certificate authority") };
    config.clusters = config.clusters.map((other) => (other === cluster ? read : other));
  }
};

/** The kubeconfig files kubectl would read: `KUBECONFIG`'s list, else `~/.kube/config`. */
const kubeconfigFiles = (env: Env): string[] => {
  const files = (env['KUBECONFIG'] ?? '').split(delimiter).filter((file) => file !== '');
  if (files.length > 0) return files;
  const home = join(homeDir(env) ?? '~', '.kube', 'config');
  if (existsSync(home)) return [home];
  throw new Error(
    `no kubeconfig: KUBECONFIG is not set and ${home} does not exist (outside a pod one is needed)`,
  );
};

/**
 * `next` without the clusters, users and contexts whose names `merged` has: kubectl takes each name from the first
 * file that has it (the client's `mergeConfig` throws `Duplicate cluster` instead).
 */
const unseen = (merged: KubeConfig, next: KubeConfig): KubeConfig => {
  const without = <T extends { readonly name: string }>(ours: readonly T[], theirs: T[]): T[] =>
    theirs.filter((entry) => !ours.some((known) => known.name === entry.name));
  next.clusters = without(merged.clusters, next.clusters);
  next.users = without(merged.users, next.users);
  next.contexts = without(merged.contexts, next.contexts);
  return next;
};

/**
 * What the current context names that no kubeconfig file has, as kubectl refuses it, or undefined: without its user
 * the client sent requests with no credentials and without the cluster's CA (a TLS failure that named neither).
 */
const missingOfContext = (config: KubeConfig): string | undefined => {
  const name = config.getCurrentContext() ?? '';
  if (name === '') return undefined;
  const context = config.getContextObject(name);
  if (context === null || context === undefined)
    return `the current-context ${name} is no context of the kubeconfig`;
  if ((context.user ?? '') !== '' && config.getUser(context.user) === null)
    return `the context ${name} names the user ${context.user}, which no kubeconfig file has`;
  return undefined;
};

/**
 * The kubeconfig files merged as kubectl merges them (the first file's current context, unless it has none), a file
 * that does not exist skipped unless none does.
 */
const loadKubeconfigFiles = async (kube: KubeClientModule, env: Env): Promise<KubeConfig> => {
  const written = new Map<string, { readonly file: string; readonly user: Fields }>();
  let config: KubeConfig | undefined;
  const files = kubeconfigFiles(env);
  for (const file of files) {
    const read = await readKubeconfig(kube, file).catch((error: unknown) => {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    });
    if (read === undefined) continue;
    for (const [name, user] of read.users) if (!written.has(name)) written.set(name, { file, user });
    if (config === undefined) config = read.config;
    else config.mergeConfig(unseen(config, read.config), (config.getCurrentContext() ?? '') !== '');
  }
  if (config === undefined)
    throw new Error(`no kubeconfig: none of KUBECONFIG's files exists (${files.join(', ')})`);
  const missing = missingOfContext(config);
  if (missing !== undefined) throw new Error(`${missing} (in ${files.join(', ')})`);
  const current = config.getCurrentUser();
  const user = current === null ? undefined : written.get(current.name);
  const problem = user === undefined ? undefined : userProblem(current!.name, user.user);
  if (problem !== undefined) throw new Error(`${problem} (in ${user!.file})`);
  trimUserTokens(config);
  return config;
};

/**
 * A fresh KubeConfig: with `KUBECONFIG` (or outside a pod), the kubeconfig files (`loadKubeconfigFiles`); in a pod,
 * the API server from `KUBERNETES_SERVICE_HOST`/`_PORT`, the mount's CA and its projected token. Built anew after
 * each failure, so rotated credentials or an edited kubeconfig are picked up (docs/operating.md, Config sources).
 * Throws when the settings cannot be read.
 */
export const loadKubeConfig = async (
  kube: KubeClientModule,
  env: Env,
  saDir = serviceAccountDir,
): Promise<KubeConfig> => {
  let config: KubeConfig;
  if (usesKubeconfig(env)) config = await loadKubeconfigFiles(kube, env);
  else {
    const host = env['KUBERNETES_SERVICE_HOST'] ?? '';
    const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
    config = new kube.KubeConfig();
    config.loadFromClusterAndUser(
      {
        name: 'in-cluster',
        server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
        caFile: join(saDir, 'ca.crt'),
        skipTLSVerify: false,
      },
      {
        name: 'service-account',
        authProvider: { name: tokenFileProvider, config: { path: join(saDir, 'token') } },
      },
    );
  }
  config.addAuthenticator(tokenFileAuthenticator);
  config.addAuthenticator(execAuthenticator(env));
  await inlineFiles(config);
  withExecClusterInfo(config);
  return config;
};

/**
 * The Pod the service account mount's token was issued for (its claims: `serviceAccountPod`), or undefined (no
 * mount, a legacy token). The token is read bounded and never kept.
 */
export const serviceAccountTokenPod = async (saDir = serviceAccountDir): Promise<PodRef | undefined> => {
  const file = join(saDir, 'token');
  const bytes = await readSmallFile(file, 2 ** 16, 'the service account token file', 'follow').catch(
    () => undefined,
  );
  return bytes === undefined ? undefined : serviceAccountPod(bytes.toString('utf8').trim());
};

/**
 * The namespace to watch when `--namespace` is not given: the pod's (the service account mount's `namespace`
 * file), else the kubeconfig context's, else `default` (as kubectl).
 */
export const defaultNamespace = async (config: KubeConfig, saDir = serviceAccountDir): Promise<string> => {
  const file = join(saDir, 'namespace');
  const mounted = await readSmallFile(file, 2 ** 10, 'the namespace file', 'follow').catch(() => undefined);
  return (
    mounted?.toString('utf8').trim() ||
    config.getContextObject(config.getCurrentContext())?.namespace ||
    'default'
  );
};
