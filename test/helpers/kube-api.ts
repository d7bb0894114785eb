/** A kube-api stand-in for CLI tests: the server (TLS from test/fixtures/tls), a kubeconfig and a token file. */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startKubeApiStandIn, type KubeApiStandIn } from '../../src/testing/kube-api-stand-in';

// test/fixtures/tls, from test/helpers or from the bench's build of it (.bench-build/test/helpers).
const tlsDir = [
  join(__dirname, '..', 'fixtures', 'tls'),
  join(__dirname, '..', '..', '..', 'test', 'fixtures', 'tls'),
].find((dir) => existsSync(dir))!;

/** The stand-in, and what a CLI needs to reach it. */
export interface KubeApiCluster {
  readonly api: KubeApiStandIn;
  /** `KUBECONFIG` for the CLI. */
  readonly env: Readonly<Record<string, string>>;
  /** The flags that make a CLI watch the stand-in's ConfigMap. */
  readonly flags: Readonly<Record<string, string>>;
  /** Rewrites the token file the kubeconfig names (a token rotation). */
  writeToken(token: string): Promise<void>;
}

/** The token the stand-in accepts. */
export const goodToken = 'stand-in-token-7f3a9c2e51';

/** The kubeconfig's user, given the path of the token file (default: `token-file`, client-node's spelling). */
export type KubeconfigUser = (tokenFile: string) => Readonly<Record<string, unknown>>;

/** What the kubeconfig's context `test` names as its user, and which context is current (defaults: `modelsync`, `test`). */
export interface KubeconfigContext {
  readonly contextUser?: string;
  readonly currentContext?: string;
}

/**
 * Starts the stand-in and writes, in `dir`, a kubeconfig whose user (`user`) reads its token from `token`
 * (initially `token`, default the right one) and trusts the fixture CA; `context` says what its context names.
 */
export const startKubeApiCluster = async (
  dir: string,
  token = goodToken,
  user: KubeconfigUser = (tokenFile) => ({ 'token-file': tokenFile }),
  { contextUser = 'modelsync', currentContext = 'test' }: KubeconfigContext = {},
): Promise<KubeApiCluster> => {
  const api = await startKubeApiStandIn({
    tls: {
      key: readFileSync(join(tlsDir, 'server-key.pem')),
      cert: readFileSync(join(tlsDir, 'server.pem')),
    },
    token: goodToken,
    namespace: 'serving',
    name: 'models',
  });
  const tokenFile = join(dir, 'token');
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(tokenFile, token);
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'stand-in', cluster: { server: api.url, 'certificate-authority': join(tlsDir, 'ca.pem') } },
      ],
      users: [{ name: 'modelsync', user: user(tokenFile) }],
      contexts: [{ name: 'test', context: { cluster: 'stand-in', user: contextUser, namespace: 'serving' } }],
      'current-context': currentContext,
    }),
  );
  return {
    api,
    env: { KUBECONFIG: kubeconfig },
    flags: { source: 'kube-api', configmap: 'models' },
    writeToken: (next) => writeFile(tokenFile, next),
  };
};

/** A models.json with one file:// model per name, each from `<root>/<name>`. */
export const modelsJson = (root: string, names: ReadonlyArray<string>): string =>
  JSON.stringify(names.map((modelName) => ({ modelName, modelSpec: { storageUri: join(root, modelName) } })));
