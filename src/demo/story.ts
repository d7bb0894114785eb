/**
 * The demo's story: the real agent (dist/cli.js, a child process) on a kubelet-style config dir and models in
 * local storage, driven through scripted ConfigMap updates, so a newcomer watches models download, load, change,
 * unload and fail, and what /status and /metrics say of each step. The model server is the `DemoWorld`.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { surfaceView } from './demo-surface';
import { atomicWrite, sleep, waitFor } from '../testing';

/** The model server the story runs against. */
export interface DemoWorld {
  /** What serves the models, in a few words ("model server stand-in (V2 repository API)", "MLServer 1.7.1"). */
  readonly title: string;
  readonly serverUrl: string;
  /** The agent's `--server-kind`. */
  readonly serverKind: string;
  /** Makes the story's models in `storage`: dirs `iris-v1`, `iris-v2`, `mnist` and `wine`. */
  stock(storage: string): Promise<void>;
  /** The names the server says are loaded. */
  loaded(): Promise<ReadonlyArray<string>>;
  /** What an inference request to `name` answers, in a few words; absent where the server cannot infer. */
  readonly infer?: (name: string) => Promise<string>;
  close(): Promise<void>;
}

const models = (entries: Readonly<Record<string, string>>): string =>
  JSON.stringify(
    Object.entries(entries).map(([modelName, storageUri]) => ({
      modelName,
      modelSpec: { storageUri, framework: 'sklearn', memory: '256Mi' },
    })),
    null,
    2,
  );

/** A port free on 127.0.0.1 right now, for the agent's HTTP surface. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

const say = (text: string): void => void process.stdout.write(`\n\x1b[1m== ${text}\x1b[0m\n`);

/** Prints the agent's JSON log lines as short human lines. */
const show = (text: string): void => {
  try {
    const entry = JSON.parse(text) as Record<string, unknown>;
    const time = new Date(Number(entry['time'])).toISOString().slice(11, 23);
    const fields = 'model phase errorKind storageUri reason modelCount models durationMs file'
      .split(' ')
      .filter((key) => entry[key] !== undefined)
      .map(
        (key) => `${key}=${typeof entry[key] === 'string' ? String(entry[key]) : JSON.stringify(entry[key])}`,
      );
    process.stdout.write(`  ${time}  ${String(entry['msg'])}  ${fields.join(' ')}\n`);
  } catch {
    process.stdout.write(`  ${text}\n`);
  }
};

/**
 * Runs the story, with the agent `cliPath` (the built dist/cli.js), against the world `open` makes over the model
 * dir it is given; then closes it and removes every file the story made.
 */
export const runDemoStory = async (
  cliPath: string,
  open: (modelDir: string) => Promise<DemoWorld>,
): Promise<void> => {
  const root = await mkdtemp(join(tmpdir(), 'modelsync-demo-'));
  const [configDir, modelDir, storage] = [join(root, 'configs'), join(root, 'models'), join(root, 'storage')];
  await Promise.all([modelDir, storage].map((dir) => mkdir(dir, { recursive: true })));
  let world: DemoWorld | undefined;
  let agent: ReturnType<typeof spawn> | undefined;
  try {
    world = await open(modelDir);
    const server = world;
    await server.stock(storage);
    const loadedNow = async (): Promise<string> => [...(await server.loaded())].sort().join(', ') || '(none)';

    say(`${server.title} on ${server.serverUrl}; config dir ${configDir}`);
    const [iris1, iris2, wine] = [join(storage, 'iris-v1'), join(storage, 'iris-v2'), join(storage, 'wine')];
    const mnist = `file://${join(storage, 'mnist')}`;
    atomicWrite(configDir, { 'models.json': models({ iris: iris1, mnist }) });
    const surfaceUrl = `http://127.0.0.1:${await freePort()}`;
    const surface = surfaceView(surfaceUrl);

    const flags = {
      '--config-dir': configDir,
      '--model-dir': modelDir,
      '--server-url': server.serverUrl,
      '--server-kind': server.serverKind,
      '--log-level': 'info',
      '--local-storage-roots': storage,
      '--http-port': new URL(surfaceUrl).port,
    };
    const running = spawn(process.execPath, [cliPath, ...Object.entries(flags).flat()], {
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    agent = running;
    const logLines: string[] = [];
    createInterface({ input: running.stderr }).on('line', (text) => {
      logLines.push(text);
      show(text);
    });
    const waitForLog = (text: string, after = 0): Promise<void> =>
      waitFor(() => logLines.slice(after).some((entry) => entry.includes(text)), 60_000, `the log "${text}"`);
    const showState = async (expected: string): Promise<void> => {
      // A real server loads for a second or two after the agent logs the step: the story waits for it.
      await waitFor(
        async () => (await surface.settled()) && (await loadedNow()) === expected,
        60_000,
        `the agent at rest and the server serving ${expected}`,
      );
      await sleep(400);
      process.stdout.write(`  loaded on the server: ${await loadedNow()}\n`);
      if (server.infer !== undefined)
        for (const name of [...(await server.loaded())].sort())
          process.stdout.write(`  inference: ${name} → ${await server.infer(name)}\n`);
      for (const line of await surface.show()) process.stdout.write(`  ${line}\n`);
    };
    const update = async (title: string, payload: string, expect: string, loaded: string): Promise<void> => {
      say(title);
      const from = logLines.length;
      atomicWrite(configDir, { 'models.json': payload });
      await waitForLog(expect, from);
      await showState(loaded);
    };

    say('starting the agent: it recovers the model dir, asks the server what is loaded, then syncs');
    say(`the agent's HTTP surface: ${surfaceUrl}/status (and /metrics, /healthz, /readyz)`);
    await waitForLog('ready');
    await showState('iris, mnist');
    await update(
      'kubelet swaps in a new ConfigMap version: wine is added',
      models({ iris: iris1, mnist, wine }),
      '"model":"wine"',
      'iris, mnist, wine',
    );
    await update(
      'iris gets a new storageUri: downloaded beside the old version, swapped, reloaded in place',
      models({ iris: iris2, mnist, wine }),
      'iris-v2',
      'iris, mnist, wine',
    );
    await update(
      'a bad edit (memory: "lots") is rejected; nothing is unloaded',
      '[{"modelName":"iris","modelSpec":{"storageUri":"x","memory":"lots"}}]',
      'config rejected',
      'iris, mnist, wine',
    );
    await update(
      'mnist is removed from the list: unloaded, then its files deleted',
      models({ iris: iris2, wine }),
      'model removed',
      'iris, wine',
    );
    await update(
      'ghost is added, but its storage path does not exist: it fails for good, the others keep serving',
      models({ iris: iris2, wine, ghost: join(storage, 'ghost') }),
      'model failed',
      'iris, wine',
    );
    say(`model dir now holds: ${(await readdir(modelDir)).sort().join(', ')}`);
    say('SIGTERM: the agent stops');
    running.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => running.on('exit', resolve));
    process.stdout.write(`  agent exited with code ${String(code)}\n`);
  } finally {
    agent?.kill('SIGKILL');
    await world?.close();
    await rm(root, { recursive: true, force: true });
  }
};
