/**
 * What an install's hand-offs to libuv's pool cost, apart from the file system's own work (issue 29): 1,000 small
 * installs made of the store's calls (a staging dir made, held open, checked and listed; a 4 KiB file and a marker
 * created through it; a chmod, the rename, the check after it), 8 at a time, either each call through
 * `fs/promises` (one trip to the pool and back each, as the store makes them) or the whole install as one job of
 * synchronous calls in a worker thread (one trip each way per install). Prints wall time and the process's CPU.
 *
 * `node .bench-build/bench/install-handoffs.js pool|worker [dir]` (dir: default the OS temp dir; /dev/shm takes
 * the disk out). Not a suite: the measurement behind docs/benchmarks.md's "A fifth look".
 */
import {
  constants,
  fstatSync,
  mkdtempSync,
  openSync,
  closeSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { fchmodSync, lstatSync, renameSync } from 'node:fs';
import { lstat, mkdtemp, open, readdir, rename } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_RDONLY, O_DIRECTORY } = constants;
const created = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
const body = Buffer.alloc(4096, 7);
const marker = Buffer.from('{"storageUri":"http://127.0.0.1/m","modelsyncFiles":{"model.bin":4096}}');

const installSynchronously = (root: string, name: string): void => {
  const staging = mkdtempSync(path.join(root, `.tmp-${name}-`));
  const dir = openSync(staging, O_RDONLY | O_NOFOLLOW | O_DIRECTORY);
  fstatSync(dir);
  readdirSync(`/proc/self/fd/${dir}`);
  for (const [file, data] of [
    ['model.bin', body],
    ['SUCCESS.x', marker],
  ] as const) {
    const fd = openSync(`/proc/self/fd/${dir}/${file}`, created, 0o644);
    writeSync(fd, data);
    closeSync(fd);
  }
  fchmodSync(dir, 0o755);
  renameSync(staging, path.join(root, name));
  lstatSync(path.join(root, name));
  closeSync(dir);
};

const installThroughPool = async (root: string, name: string): Promise<void> => {
  const staging = await mkdtemp(path.join(root, `.tmp-${name}-`));
  const dir = await open(staging, O_RDONLY | O_NOFOLLOW | O_DIRECTORY);
  await dir.stat();
  await readdir(`/proc/self/fd/${dir.fd}`);
  const file = await open(`/proc/self/fd/${dir.fd}/model.bin`, created, 0o644);
  await file.write(body);
  await file.close();
  const [mark] = await Promise.all([
    open(`/proc/self/fd/${dir.fd}/SUCCESS.x`, created, 0o644),
    dir.chmod(0o755),
  ]);
  await mark.write(marker);
  await mark.close();
  await rename(staging, path.join(root, name));
  await lstat(path.join(root, name));
  await dir.close();
};

type Install = (root: string, name: string) => Promise<void>;

const inWorker = (worker: Worker): Install => {
  const pending = new Map<number, (error?: string) => void>();
  let seq = 0;
  worker.on('message', ({ id, error }: { id: number; error?: string }) => pending.get(id)?.(error));
  return (root, name) =>
    new Promise((resolve, reject) => {
      const id = seq++;
      pending.set(id, (error) => {
        pending.delete(id);
        if (error === undefined) resolve();
        else reject(new Error(error));
      });
      worker.postMessage({ id, root, name });
    });
};

const main = async (): Promise<void> => {
  const [mode = 'pool', base = os.tmpdir()] = process.argv.slice(2);
  const root = mkdtempSync(path.join(base, 'modelsync-bench-handoffs-'));
  const worker = mode === 'worker' ? new Worker(__filename) : undefined;
  const install = worker === undefined ? installThroughPool : inWorker(worker);
  try {
    await install(root, 'warm-up');
    const [cpu, started] = [process.cpuUsage(), performance.now()];
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < 1000) await install(root, `model-${next++}`);
    };
    await Promise.all(Array.from({ length: 8 }, lane));
    const used = process.cpuUsage(cpu);
    const ms = (micros: number): string => (micros / 1000).toFixed(0);
    console.log(
      `${mode}: 1000 installs in ${(performance.now() - started).toFixed(0)} ms, ` +
        `user ${ms(used.user)} ms, system ${ms(used.system)} ms (all threads)`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
    await worker?.terminate();
  }
};

if (isMainThread) void main();
else
  parentPort!.on('message', ({ id, root, name }: { id: number; root: string; name: string }) => {
    try {
      installSynchronously(root, name);
      parentPort!.postMessage({ id });
    } catch (error) {
      parentPort!.postMessage({ id, error: String(error) });
    }
  });
