/**
 * Child process of the initializer suite: one download of a URL by the agent's edges (stage, router, commit) or
 * by the storage initializer (`initializerMode`), reporting its bytes, time and memory over IPC.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { DriverReport } from './download-driver';
import { sampleRss } from './rss';

/** Who downloads: the agent (its capabilities' store and router, as `bringIn` uses them) or the initializer. */
export type InitializerVariant = 'agent' | 'initializer';

const variants: ReadonlyArray<string> = ['agent', 'initializer'];

// Modules loaded once, before the RSS sampling and the clock start: both ways load the same wiring.
const load = async () => {
  const [{ default: pino }, wiring, mode, flags] = await Promise.all([
    import('pino'),
    import('../src/wiring/index.js'),
    import('../src/command/initializer-mode.js'),
    import('../src/core/flags/app-config.js'),
  ]);
  return { log: pino({ level: 'silent' }), wiring, mode, config: flags.defaultAppConfig };
};
type Loaded = Awaited<ReturnType<typeof load>>;

/** A finished download: the file to measure, and what must be waited for after the clock stops. */
interface Downloaded {
  readonly file: string;
  readonly settle: () => Promise<void>;
}

/** As `bringIn` downloads: a staging dir of the model dir, the router into it, the commit (marker, rename). */
const viaAgent = async ({ log, wiring, config }: Loaded, url: string, dir: string): Promise<Downloaded> => {
  const edges = wiring.capabilities({ ...config, modelDir: dir }, log, {});
  if (edges._tag === 'Left') throw new Error(edges.left);
  const { store, download } = edges.right;
  const signal = new AbortController().signal;
  const name = 'bench' as Parameters<typeof store.stage>[0];
  const staged = await store.stage(name, { storageUri: url }, signal);
  try {
    await download(url, staged.dir, signal, () => undefined); // bringIn listens to the progress too
  } catch (cause) {
    throw await staged.abandon(cause);
  }
  const installed = await staged.commit();
  // The background flush is off the agent's path to the load, so off the clock; but it is waited for before the
  // child exits, or its writes would land on the next run (the initializer's) and slow it down.
  return { file: path.join(dir, 'bench', 'model.bin'), settle: () => installed.dropReplaced() };
};

/** As KServe runs the init container: `modelsync <url> <dir>`, through the mode itself. */
const viaInitializer = async (
  { log, mode, config }: Loaded,
  url: string,
  dir: string,
): Promise<Downloaded> => {
  const { lastValueFrom } = await import('rxjs');
  const exit = await lastValueFrom(mode.initializerMode([{ uri: url, dest: dir }], config, log, {}));
  if (exit._tag !== 'Exit' || exit.code !== 0)
    throw new Error(`the initializer ended with ${JSON.stringify(exit)}`);
  return { file: path.join(dir, 'model.bin'), settle: () => Promise.resolve() };
};

const main = async (): Promise<void> => {
  const [variant, url, dir] = process.argv.slice(2);
  if (variant === undefined || url === undefined || dir === undefined || !variants.includes(variant)) {
    throw new Error('usage: initializer-driver agent|initializer <url> <empty dir>');
  }
  const loaded = await load();
  const rss = sampleRss();
  const started = performance.now();
  const downloaded = await (variant === 'agent' ? viaAgent : viaInitializer)(loaded, url, dir);
  const seconds = (performance.now() - started) / 1000;
  const report: DriverReport = { bytes: statSync(downloaded.file).size, seconds, ...rss.stop() };
  await downloaded.settle();
  // Exits at once: the agent's background flush and kept-alive connections are not part of the figure.
  process.send!(report, () => process.exit(0));
};

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
