/**
 * The floor the swap-to-load suite compares modelsync with: the least a sidecar can do. A bare `fs.watch` of the
 * config dir; at each `..data` event, read models.json, and for every model not seen before GET its file over
 * keep-alive http, write it into the model dir and POST the V2 load. No validation, no durability, no retries.
 * With a resync interval, also the least a resync is: every interval, ask the server's index and load again each
 * model it lacks (the idle suite measures the agent's resync against it, on a machine that charges for memory
 * touched after a while idle as much as for the work).
 * With `--crash-safe` first, the least a crash-safe one can do (the `floor-crash-safe` lanes of adds-throughput and
 * swap-to-load): each model written into a staging dir of its own (mkdtemp, files created exclusively), a
 * `SUCCESS.<hash>` marker beside them, the dir renamed into place, one journal line a model (appended once an
 * event-loop turn) and one log line a model, before its load. No fsync on the way to the load (modelsync's are
 * batched once installs pause), no checks.
 * Run as `node floor-watcher.js [--crash-safe] <config-dir> <model-dir> <server-url> [<resync-interval-ms>]`; it
 * writes one line, `{"msg":"watching"}` on stderr, once it watches and has taken in the config in place.
 */
import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readFile, rename, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';

const crashSafe = process.argv[2] === '--crash-safe';
const [configDir, modelDir, serverUrl, resyncMs] = process.argv.slice(crashSafe ? 3 : 2) as [
  string,
  string,
  string,
  string?,
];
// At most 32 connections to a host, as a sidecar written with care would hold them: with none, 1,000 models in one
// swap open 1,000 connections at once and took 1.15x the Go agent's time; with 8, 32 or 128, 0.74-0.83x (stop 55).
const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
const seen = new Set<string>();

const request = (url: string, method: 'GET' | 'POST', body?: string): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve(Buffer.concat(chunks)));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });

/** The journal's lines of this event-loop turn, appended at its end in one write (a group commit without the fsync). */
let journalLines: string[] = [];
let journalTurn: Promise<void> | undefined;
/** Resolves once `line` is appended, with the rest of its turn's lines. */
const journal = (line: string): Promise<void> => {
  journalLines.push(line);
  journalTurn ??= new Promise((resolve, reject) =>
    setImmediate(() => {
      const lines = journalLines.join('');
      journalLines = [];
      journalTurn = undefined;
      appendFile(path.join(modelDir, '.journal'), lines).then(resolve, reject);
    }),
  );
  return journalTurn;
};

const installed = async (name: string, storageUri: string, file: string, bytes: Buffer): Promise<void> => {
  const staging = await mkdtemp(path.join(modelDir, `.staging-${name}-`));
  await writeFile(path.join(staging, file), bytes, { flag: 'wx' });
  const hash = createHash('sha256').update(storageUri).digest('hex');
  await writeFile(path.join(staging, `SUCCESS.${hash}`), JSON.stringify({ storageUri, files: 1 }), {
    flag: 'wx',
  });
  await rename(staging, path.join(modelDir, name));
  await journal(`${JSON.stringify({ name, storageUri, hash })}\n`);
  console.error(JSON.stringify({ level: 30, time: Date.now(), model: name, msg: 'model installed' }));
};

const bringIn = async (name: string, storageUri: string): Promise<void> => {
  const bytes = await request(storageUri, 'GET');
  const file = path.basename(new URL(storageUri).pathname);
  if (crashSafe) await installed(name, storageUri, file, bytes);
  else {
    await mkdir(path.join(modelDir, name), { recursive: true });
    await writeFile(path.join(modelDir, name, file), bytes);
  }
  await request(`${serverUrl}/v2/repository/models/${name}/load`, 'POST');
};

const sync = async (): Promise<void> => {
  const models = JSON.parse(await readFile(path.join(configDir, 'models.json'), 'utf8')) as Array<{
    modelName: string;
    modelSpec: { storageUri: string };
  }>;
  await Promise.all(
    models
      .filter((model) => !seen.has(model.modelName))
      .map((model) => {
        seen.add(model.modelName);
        return bringIn(model.modelName, model.modelSpec.storageUri);
      }),
  );
};

const resync = async (): Promise<void> => {
  const index = JSON.parse(
    (await request(`${serverUrl}/v2/repository/index`, 'POST', '{}')).toString(),
  ) as Array<{
    name: string;
    state?: string;
  }>;
  const loaded = new Set(index.filter((model) => model.state === 'READY').map((model) => model.name));
  for (const name of seen)
    if (!loaded.has(name)) await request(`${serverUrl}/v2/repository/models/${name}/load`, 'POST');
};
if (resyncMs !== undefined)
  setInterval(() => {
    resync().catch((error: unknown) => console.error(String(error)));
  }, Number(resyncMs));

watch(configDir, (_event, name) => {
  if (name === '..data') sync().catch((error: unknown) => console.error(String(error)));
});
// One line once the watch is armed and the config in place is in: a driver that swaps next knows it is seen.
sync().then(
  () => console.error(JSON.stringify({ msg: 'watching' })),
  (error: unknown) => console.error(String(error)),
);
