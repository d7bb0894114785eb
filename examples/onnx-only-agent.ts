/**
 * onnxOnlyAgent: the stock agent with an integrator's operator passed to `startAgent`, run against the test kit
 * (`modelsync/testing`): a V2 model server stand-in and a ConfigMap dir updated the way kubelet does it.
 * `node onnx-only-agent.js` runs it once and prints what the server loaded.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filter, firstValueFrom } from 'rxjs';
import {
  agentSettings,
  capabilities,
  createLogger,
  defaultAppConfig,
  startAgent,
  type AgentEvent,
  type AppConfig,
} from 'modelsync';
import { atomicWrite, startV2ModelServer } from 'modelsync/testing';
import { keepFrameworks } from './keep-frameworks';

type Ready = Extract<AgentEvent, { readonly _tag: 'Ready' }>;

/** What the run saw: the models the server had loaded at Ready, and Ready's model count. */
export interface OnnxOnlyRun {
  readonly loaded: ReadonlyArray<string>;
  readonly modelCount: number;
}

/** Lists three models (two ONNX, one sklearn), runs the agent with `keepFrameworks(['onnx'])` until Ready. */
export const runOnnxOnlyAgent = async (): Promise<OnnxOnlyRun> => {
  const root = await mkdtemp(join(tmpdir(), 'modelsync-example-'));
  const server = await startV2ModelServer({ modelDir: join(root, 'models') });
  try {
    const models = { a: 'onnx', b: 'sklearn', c: 'onnx' };
    for (const model of Object.keys(models)) {
      await mkdir(join(root, 'storage', model), { recursive: true });
      await writeFile(join(root, 'storage', model, 'model.bin'), `${model} weights`);
    }
    const modelsJson = Object.entries(models).map(([modelName, framework]) => ({
      modelName,
      modelSpec: { storageUri: join(root, 'storage', modelName), framework },
    }));
    atomicWrite(join(root, 'configs'), { 'models.json': JSON.stringify(modelsJson) });

    const config: AppConfig = {
      ...defaultAppConfig,
      configDir: join(root, 'configs'),
      modelDir: join(root, 'models'),
      serverUrl: server.url,
      // Local storageUris must lie under these dirs (--local-storage-roots; by default only /mnt/pvc).
      localStorageRoots: [join(root, 'storage')],
    };
    const log = createLogger('warn');
    const edges = capabilities(config, log, {});
    if (edges._tag === 'Left') throw new Error(edges.left);
    // The splice: the stock start-up and pipeline, with one more operator on the accepted snapshots.
    const agent$ = startAgent(edges.right, {
      ...agentSettings(config, log),
      snapshotOperators: [keepFrameworks(['onnx'])],
    });
    const ready = await firstValueFrom(
      agent$.pipe(filter((event): event is Ready => event._tag === 'Ready')),
    );
    return { loaded: [...server.loaded].sort(), modelCount: ready.modelCount };
  } finally {
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
};

if (require.main === module) {
  runOnnxOnlyAgent().then(
    (run) => process.stdout.write(`${JSON.stringify(run)}\n`),
    (error: unknown) => {
      process.stderr.write(`onnx-only-agent failed: ${String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
