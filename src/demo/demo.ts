/**
 * `npm run demo`: the real agent (dist/cli.js, as a child process) on an embedded default — a kubelet-style config
 * dir, models in local storage and a stand-in model server speaking the V2 repository API — driven through a few
 * scripted ConfigMap updates, so a newcomer watches models download, load, change, unload and fail — and, on the
 * agent's HTTP port, what /status and /metrics say of each step. No cluster needed.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { surfaceView } from './demo-surface';
import { atomicWrite, startV2ModelServer, sleep, waitFor } from '../testing';
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
    const fields = [
      'model',
      'phase',
      'errorKind',
      'storageUri',
      'reason',
      'modelCount',
      'models',
      'durationMs',
      'file',
    ]
      .filter((key) => entry[key] !== undefined)
      .map(
        (key) => `${key}=${typeof entry[key] === 'string' ? String(entry[key]) : JSON.stringify(entry[key])}`,
      );
    process.stdout.write(`  ${time}  ${String(entry['msg'])}  ${fields.join(' ')}\n`);
  } catch {
    process.stdout.write(`  ${text}\n`);
  }
};

const main = async (): Promise<void> => {
  const root = await mkdtemp(join(tmpdir(), 'modelsync-demo-'));
  const [configDir, modelDir, storage] = ['configs', 'models', 'storage'].map((name) => join(root, name)) as [
    string,
    string,
    string,
  ];
  for (const [model, content] of Object.entries({
    'iris-v1': 'iris v1',
    'iris-v2': 'iris v2',
    mnist: 'mnist',
    wine: 'wine',
  })) {
    await mkdir(join(storage, model), { recursive: true });
    await writeFile(join(storage, model, 'model.joblib'), `${content} weights\n`);
  }
  const server = await startV2ModelServer({ modelDir, loadDelayMs: 150 });
  const loadedNow = (): string => [...server.loaded].sort().join(', ') || '(none)';

  say(`model server stand-in (V2 repository API) on ${server.url}; config dir ${configDir}`);
  const iris1 = join(storage, 'iris-v1');
  const iris2 = join(storage, 'iris-v2');
  const mnist = `file://${join(storage, 'mnist')}`;
  const wine = join(storage, 'wine');
  atomicWrite(configDir, { 'models.json': models({ iris: iris1, mnist }) });
  const surfaceUrl = `http://127.0.0.1:${await freePort()}`;
  const surface = surfaceView(surfaceUrl);

  const agent = spawn(
    process.execPath,
    [
      join(__dirname, '..', 'cli.js'),
      '--config-dir',
      configDir,
      '--model-dir',
      modelDir,
      '--server-url',
      server.url,
      '--log-level',
      'info',
      '--local-storage-roots',
      storage,
      '--http-port',
      new URL(surfaceUrl).port,
    ],
    { stdio: ['ignore', 'inherit', 'pipe'] },
  );
  const logLines: string[] = [];
  createInterface({ input: agent.stderr }).on('line', (text) => {
    logLines.push(text);
    show(text);
  });
  const waitForLog = (text: string, after = 0): Promise<void> =>
    waitFor(() => logLines.slice(after).some((entry) => entry.includes(text)), 20_000, `the log "${text}"`);
  const showState = async (): Promise<void> => {
    process.stdout.write(`  loaded on the server: ${loadedNow()}\n`);
    for (const line of await surface.show()) process.stdout.write(`  ${line}\n`);
  };
  const update = async (title: string, payload: string, expect: string): Promise<void> => {
    say(title);
    const from = logLines.length;
    atomicWrite(configDir, { 'models.json': payload });
    await waitForLog(expect, from);
    await sleep(400);
    await showState();
  };

  try {
    say('starting the agent: it recovers the model dir, asks the server what is loaded, then syncs');
    say(`the agent's HTTP surface: ${surfaceUrl}/status (and /metrics, /healthz, /readyz)`);
    await waitForLog('ready');
    await showState();
    await update(
      'kubelet swaps in a new ConfigMap version: wine is added',
      models({ iris: iris1, mnist, wine }),
      '"model":"wine"',
    );
    await update(
      'iris gets a new storageUri: downloaded beside the old version, swapped, reloaded in place',
      models({ iris: iris2, mnist, wine }),
      'iris-v2',
    );
    await update(
      'a bad edit (memory: "lots") is rejected; nothing is unloaded',
      '[{"modelName":"iris","modelSpec":{"storageUri":"x","memory":"lots"}}]',
      'config rejected',
    );
    await update(
      'mnist is removed from the list: unloaded, then its files deleted',
      models({ iris: iris2, wine }),
      'model removed',
    );
    await update(
      'ghost is added, but its storage path does not exist: it fails for good, the others keep serving',
      models({ iris: iris2, wine, ghost: join(storage, 'ghost') }),
      'model failed',
    );
    say(`model dir now holds: ${(await readdir(modelDir)).sort().join(', ')}`);
    say('SIGTERM: the agent stops');
    agent.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => agent.on('exit', resolve));
    process.stdout.write(`  agent exited with code ${String(code)}\n`);
  } finally {
    agent.kill('SIGKILL');
    await server.close();
    await rm(root, { recursive: true, force: true });
  }
};

main().catch((error: unknown) => {
  process.stderr.write(`demo failed: ${String(error)}\n`);
  process.exitCode = 1;
});
