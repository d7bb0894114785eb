/**
 * For a CLI test of `--source kube-api`: `start()` runs the API-server stand-in, model files in `<tmp>/pvc`, a V2
 * stand-in over a fresh model dir and the real CLI watching the ConfigMap; the stand-ins are closed after each
 * test (the CLI by `killAllCli`).
 */
import { mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, startCli, type CliProcess } from './cli-process';
import { writeFiles } from './file-tree';
import {
  modelsJson,
  startKubeApiCluster,
  type KubeApiCluster,
  type KubeconfigContext,
  type KubeconfigUser,
} from './kube-api';

/** What `start` is given: the models with files, the ConfigMap's first list, the token and user, more CLI flags. */
export interface KubeAgentOptions {
  /** Model names with files in storage (default alpha, beta, gamma, delta). */
  readonly names?: ReadonlyArray<string>;
  /** The names the ConfigMap lists at start; undefined: there is no ConfigMap yet. */
  readonly initial?: ReadonlyArray<string>;
  /** The token the kubeconfig's token file holds (default the one the stand-in accepts). */
  readonly token?: string;
  /** The kubeconfig's user (default: the token file as `token-file`). */
  readonly user?: KubeconfigUser;
  readonly flags?: Readonly<Record<string, string | number | boolean>>;
  /** What the kubeconfig's context names (default: its user, `modelsync`, in the current context `test`). */
  readonly context?: KubeconfigContext;
  /** More kubeconfig files, listed in `KUBECONFIG` after the stand-in's (kubectl merges them, the first one winning). */
  readonly moreKubeconfigs?: ReadonlyArray<string>;
}

/** What runs for one test. */
export interface KubeAgent {
  readonly agent: CliProcess;
  readonly cluster: KubeApiCluster;
  readonly server: V2ModelServerStandIn;
}

export const useKubeAgent = (tmp: { readonly path: string }) => {
  let cluster: KubeApiCluster | undefined;
  let server: V2ModelServerStandIn | undefined;
  afterEach(async () => {
    await cluster?.api.close();
    await server?.close();
    cluster = server = undefined;
  });
  const storage = (): string => join(tmp.path, 'pvc');
  /** The ConfigMap data listing `names`, each a file:// model of storage. */
  const models = (...names: string[]): Record<string, string> => ({
    'models.json': modelsJson(storage(), names),
  });
  const start = async (options: KubeAgentOptions = {}): Promise<KubeAgent> => {
    const names = options.names ?? ['alpha', 'beta', 'gamma', 'delta'];
    await writeFiles(storage(), Object.fromEntries(names.map((name) => [`${name}/model.bin`, name])));
    const modelDir = join(tmp.path, 'models');
    mkdirSync(modelDir);
    cluster = await startKubeApiCluster(tmp.path, options.token, options.user, options.context);
    if (options.initial !== undefined) cluster.api.apply(models(...options.initial));
    server = await startV2ModelServer({ modelDir });
    const agent = startCli(
      cliArgs({
        ...cluster.flags,
        'model-dir': modelDir,
        'server-url': server.url,
        'local-storage-roots': storage(),
        'retry-base-ms': 50,
        'retry-max-ms': 200,
        ...options.flags,
      }),
      {
        env: { KUBECONFIG: [cluster.env['KUBECONFIG']!, ...(options.moreKubeconfigs ?? [])].join(delimiter) },
      },
    );
    return { agent, cluster, server };
  };
  return { start, storage, models };
};
