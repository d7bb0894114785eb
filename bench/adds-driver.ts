/** Child process of the adds-throughput suite: the agent (startAgent, real edges) on a config of N models, until all are loaded. */
import { performance } from 'node:perf_hooks';
import { sampleRss, type RssFigures } from './rss';

/** The caps the suite runs the agent (and its floor) at: the defaults. */
export const downloadConcurrency = 4;
export const loadConcurrency = 2;

/** What the child reports to the suite. */
export interface DriverReport extends RssFigures {
  readonly count: number;
  readonly seconds: number;
  readonly loaded: number;
  readonly failed: number;
  readonly retries: number;
  /** When the last model that needed no retry was Loaded, seconds from the start. */
  readonly lastFirstTrySeconds: number;
  /** Distinct Retrying reasons (model names and temp paths blanked out), with counts. */
  readonly retryReasons: Readonly<Record<string, number>>;
  /** CPU the child used during the run (process.cpuUsage: its main thread and libuv's pool), in seconds. */
  readonly cpuUserSeconds: number;
  readonly cpuSystemSeconds: number;
  readonly downloadHighWater: number;
  readonly loadHighWater: number;
}

/** The child: loads modelsync's modules, runs the agent on a config of `count` models and reports over IPC. */
const driver = async (): Promise<void> => {
  const [countText, serverUrl, modelDir, sourceDir] = process.argv.slice(2);
  const count = Number(countText);
  if (
    !Number.isInteger(count) ||
    serverUrl === undefined ||
    modelDir === undefined ||
    sourceDir === undefined
  ) {
    throw new Error('usage: adds-throughput <count> <server url> <model dir> <source dir>');
  }
  // Loaded here, not at the top, so the parent does not pay for them.
  const pino = (await import('pino')).default;
  const { firstValueFrom, ignoreElements, tap, defaultIfEmpty } = await import('rxjs');
  const { defaultAppConfig } = await import('../src/core/flags/app-config.js');
  const { agentSettings, capabilities } = await import('../src/wiring/capabilities.js');
  const { startAgent } = await import('../src/agent/start-agent.js');
  const { fixedConfigSource } = await import('../src/testing/fixed-config-source.js');
  type Loader = import('../src/loader/loader').Loader;

  // Retrying and Failed are counted from the status events below; only errors reach stderr.
  const log = pino({ level: 'error' }, pino.destination(2));
  const config = {
    ...defaultAppConfig,
    modelDir,
    serverUrl,
    downloadConcurrency,
    loadConcurrency,
    localStorageRoots: [sourceDir],
  };
  const edges = capabilities(config, log, {});
  if (edges._tag === 'Left') throw new Error(edges.left);
  // models.json listing every model, never changing: the agent completes once all of them are loaded.
  const modelsJson = JSON.stringify(
    Array.from({ length: count }, (_, i) => ({
      modelName: `model-${String(i).padStart(5, '0')}`,
      modelSpec: { storageUri: sourceDir, framework: 'sklearn' },
    })),
  );
  let loader: Loader | undefined;
  const agent$ = startAgent(
    { ...edges.right, configSource: fixedConfigSource(modelsJson) },
    { ...agentSettings(config, log), onStart: (start) => (loader = start.loader) },
  );
  let loaded = 0;
  let failed = 0;
  let retries = 0;
  let lastFirstTryMs = 0;
  const retried = new Set<string>();
  const retryReasons: Record<string, number> = {};
  const generic = (reason: string): string =>
    reason.replaceAll(modelDir, '<M>').replace(/model-\d{5}/g, '<name>');
  const rss = sampleRss();
  const started = performance.now();
  const cpuAtStart = process.cpuUsage();
  await firstValueFrom(
    agent$.pipe(
      tap((event) => {
        if (event._tag !== 'Status') return;
        if (event.status.phase === 'Loaded') {
          loaded++;
          if (!retried.has(event.status.modelName)) lastFirstTryMs = performance.now();
        } else if (event.status.phase === 'Failed') failed++;
        else if (event.status.phase === 'Retrying') {
          retries++;
          retried.add(event.status.modelName);
          const reason = generic(event.status.reason ?? 'unknown');
          retryReasons[reason] = (retryReasons[reason] ?? 0) + 1;
        }
      }),
      ignoreElements(),
      defaultIfEmpty(undefined),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuAtStart);
  const report: DriverReport = {
    count,
    seconds,
    loaded,
    failed,
    retries,
    lastFirstTrySeconds: (lastFirstTryMs - started) / 1000,
    retryReasons,
    cpuUserSeconds: cpu.user / 1e6,
    cpuSystemSeconds: cpu.system / 1e6,
    ...rss.stop(),
    downloadHighWater: loader?.slots.download.highWater() ?? 0,
    loadHighWater: loader?.slots.load.highWater() ?? 0,
  };
  process.send!(report, () => process.disconnect());
};

// Only as a child: the suite imports this module for its caps and types.
if (require.main === module) {
  driver().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
