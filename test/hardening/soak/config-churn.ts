/**
 * Config churn for the soak: the real process (`dist/cli.js`) against a live V2 stand-in, fed a seeded stream of
 * kubelet-style models.json swaps in which models come, go, change version and sometimes fail to load, then one
 * last config it must converge to. Samples the agent process's RSS along the way.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { seededRandom } from '../../../src/testing/seeded-random';
import { startV2ModelServer } from '../../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../../src/testing/wait';
import { cliArgs, startCli } from '../../helpers/cli-process';
import { writeFiles } from '../../helpers/file-tree';

/** How much churn, from which seed, and how often to sample RSS. */
export interface ChurnOptions {
  readonly root: string;
  readonly updates: number;
  readonly seed: number;
  /** Models the configs choose from. */
  readonly modelCount: number;
  /** Versions (storage dirs) per model. */
  readonly versions: number;
  /** Sample the agent's RSS after every this many updates; 0: never. */
  readonly rssEvery: number;
  /** Environment of the agent process (e.g. NODE_OPTIONS). */
  readonly env?: Readonly<Record<string, string>>;
}

/** An RSS sample of the agent process: after how many updates, and how many bytes. */
export interface RssSample {
  readonly update: number;
  readonly rssBytes: number;
}

/** What a churn run saw. */
export interface ChurnResult {
  readonly seconds: number;
  /** Invalid updates the agent read and rejected (logged at warn). */
  readonly rejected: number;
  readonly finalModels: ReadonlyMap<string, number>;
  readonly loadedAtEnd: ReadonlySet<string>;
  readonly modelDirAtEnd: ReadonlyMap<string, string>;
  readonly loads: number;
  readonly injectedFailures: number;
  readonly failedLines: number;
  readonly rss: ReadonlyArray<RssSample>;
  readonly exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null };
}

/** The agent's resident set size, from /proc (Linux). */
const rssOf = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kib) * 1024;
};

const storageDir = (root: string, model: string, version: number): string =>
  join(root, 'storage', `${model}-v${version}`);

/** A random config: each model listed with probability 1/2, at a random version. */
const randomConfig = (random: () => number, options: ChurnOptions): Map<string, number> => {
  const config = new Map<string, number>();
  for (let i = 0; i < options.modelCount; i++) {
    if (random() < 0.5) config.set(`m${String(i).padStart(3, '0')}`, Math.floor(random() * options.versions));
  }
  return config;
};

const modelsJsonOf = (root: string, config: ReadonlyMap<string, number>): string =>
  JSON.stringify(
    [...config].map(([modelName, version]) => ({
      modelName,
      modelSpec: { storageUri: storageDir(root, modelName, version), framework: 'sklearn' },
    })),
  );

/** The model dirs and the version each holds (its `model.pt` says `<model>-v<version>`). */
const modelDirVersions = async (modelDir: string, names: Iterable<string>): Promise<Map<string, string>> => {
  const versions = new Map<string, string>();
  for (const name of names) {
    versions.set(name, await readFile(join(modelDir, name, 'model.pt'), 'utf8').catch(() => 'missing'));
  }
  return versions;
};

/**
 * Runs the churn: `updates` swaps of models.json, 2 to 20 ms apart, about 1 in 50 of them invalid JSON (each held
 * until the agent rejects it) and about 1 in 40 followed by an injected 503 on the next load; then a last valid
 * config, and waits until the stand-in's loaded set and the model dir match it. Stops the agent with SIGTERM.
 */
export const runChurn = async (options: ChurnOptions): Promise<ChurnResult> => {
  const { root, updates, rssEvery } = options;
  const random = seededRandom(options.seed);
  for (let i = 0; i < options.modelCount; i++) {
    const model = `m${String(i).padStart(3, '0')}`;
    for (let version = 0; version < options.versions; version++)
      await writeFiles(storageDir(root, model, version), { 'model.pt': `${model}-v${version}` });
  }
  const configDir = join(root, 'configs');
  const modelDir = join(root, 'models');
  const standIn = await startV2ModelServer({ modelDir });
  atomicWrite(configDir, { 'models.json': '[]' });
  const cli = startCli(
    cliArgs({
      'config-dir': configDir,
      'model-dir': modelDir,
      'local-storage-roots': root,
      'server-url': standIn.url,
      'log-level': 'warn',
      'retry-base-ms': 10,
      'retry-max-ms': 200,
      'max-attempts': 1000,
    }),
    { env: options.env ?? {} },
  );
  const started = Date.now();
  const rss: RssSample[] = [];
  let injectedFailures = 0;
  try {
    await waitFor(() => standIn.requests.length > 0, 20_000, 'the agent to ask the server');
    for (let update = 1; update <= updates; update++) {
      const invalid = random() < 0.02;
      // Each cut edit its own bytes: two alike in a row would be one read (skipUnchangedReads).
      const text = invalid
        ? `[{"modelName": "cut-${update}`
        : modelsJsonOf(root, randomConfig(random, options));
      const logsBefore = cli.logs.length;
      atomicWrite(configDir, { 'models.json': text });
      // A swap 2-20 ms later would coalesce with it (the agent settles swaps for 60 ms), and on a busy host every
      // cut edit was coalesced away: wait until the agent has read and rejected this one.
      if (invalid) await cli.waitForLog((log) => log.msg.startsWith('config rejected'), 10_000, logsBefore);
      if (random() < 0.025) {
        standIn.failNextLoads(1, 503);
        injectedFailures++;
      }
      if (rssEvery > 0 && update % rssEvery === 0)
        rss.push({ update, rssBytes: await rssOf(cli.child.pid!) });
      await sleep(2 + Math.floor(random() * 18));
    }
    const finalModels = randomConfig(random, options);
    atomicWrite(configDir, { 'models.json': modelsJsonOf(root, finalModels) });
    const wanted = [...finalModels].map(([model, version]) => `${model}:${model}-v${version}`).sort();
    let modelDirAtEnd = new Map<string, string>();
    await waitFor(
      async () => {
        if (cli.child.exitCode !== null) throw new Error(`the agent exited\n${cli.transcript()}`);
        const loaded = [...standIn.loaded].sort();
        if (loaded.join() !== [...finalModels.keys()].sort().join()) return false;
        const entries = (await readdir(modelDir)).filter((entry) => !entry.startsWith('.'));
        modelDirAtEnd = await modelDirVersions(modelDir, entries);
        return (
          [...modelDirAtEnd]
            .map(([m, v]) => `${m}:${v}`)
            .sort()
            .join() === wanted.join()
        );
      },
      120_000,
      () => `convergence to the last config\n${cli.transcript(10)}`,
    );
    const loadedAtEnd = new Set(standIn.loaded);
    const seconds = (Date.now() - started) / 1000;
    const exit = await cli.signalAndWait('SIGTERM', 20_000);
    return {
      seconds,
      rejected: cli.logs.filter((log) => log.msg.startsWith('config rejected')).length,
      finalModels,
      loadedAtEnd,
      modelDirAtEnd,
      loads: standIn.loads.length,
      injectedFailures,
      failedLines: cli.logs.filter((log) => log.msg === 'model failed').length,
      rss,
      exit,
    };
  } finally {
    cli.child.kill('SIGKILL');
    await standIn.close();
  }
};
