/**
 * What the parallel-download suite times: the real agent (start → load request), its peers aria2c and rclone and the
 * undici-only lane (spawn → exit), each one's CPU time, and the one-file http source they fetch with ranged requests
 * (which notes its first request: the download itself is timed from there).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { atomicWrite } from '../src/testing/atomic-writer';
import { startHttpServer } from '../src/testing/http-server';
import { startV2ModelServer } from '../src/testing/v2-model-server';
import { cliPath, loadArrivals, modelName, startAgentProcess, stopProcess } from './agent-fixture';
import type { RelayProcess } from './relay';

const MiB = 2 ** 20;
const run = promisify(execFile);
const peerTimeoutMs = 600_000;

/** Why the peers cannot run here (the installer to run), or undefined when both are on the PATH. */
export const missingPeers = (): string | undefined => {
  const missing = ['aria2c', 'rclone'].filter(
    (command) => spawnSync(command, ['--version'], { stdio: 'ignore' }).error !== undefined,
  );
  return missing.length === 0
    ? undefined
    : `${missing.join(' and ')} not found: run scripts/install-bench-peers.sh (installs aria2 and rclone)`;
};

/** Whether the agent build knows `flag` (a flag another change is adding is refused until it lands). */
export const agentHasFlag = (flag: string): boolean =>
  execFileSync(process.execPath, [cliPath, '--help'], { encoding: 'utf8' }).includes(flag);

/**
 * Writes `bytes` (whole MiB) to `file`: one random MiB repeated, each MiB stamped with its index, so a copy with
 * a part in the wrong place, or missing, fails `checkCopy`.
 */
export const writeSource = (file: string, bytes: number): void => {
  const block = randomBytes(MiB);
  const fd = openSync(file, 'w');
  try {
    for (let at = 0; at < bytes; at += MiB) {
      block.writeDoubleLE(at / MiB, 0);
      writeSync(fd, block, 0, Math.min(MiB, bytes - at));
    }
  } finally {
    closeSync(fd);
  }
};

/** Throws unless `file` is `bytes` long and every MiB carries its own index (see `writeSource`). */
export const checkCopy = (file: string, bytes: number): void => {
  const size = statSync(file).size;
  if (size !== bytes) throw new Error(`${file}: ${size} bytes, expected ${bytes}`);
  const stamp = Buffer.alloc(8);
  const fd = openSync(file, 'r');
  try {
    for (let at = 0; at < bytes; at += MiB) {
      readSync(fd, stamp, 0, 8, at);
      if (stamp.readDoubleLE(0) !== at / MiB) throw new Error(`${file}: MiB ${at / MiB} is not in its place`);
    }
  } finally {
    closeSync(fd);
  }
};

/**
 * Writes back every dirty page (a source just written, s3rver's copy of it, the copy a tool left) before a run, so
 * that no run shares the disk with write-back it did not cause. On this VM page-cache writes ran several times slower
 * while a fresh GiB was being written back (the agent's system time 2.3-2.8 CPU-s per GiB instead of 0.6-0.8 right
 * after s3rver took the object), and which tool that landed on was the order's chance.
 */
export const settleDisk = (): void => {
  execFileSync('sync');
};

type ByteRange = readonly [number, number];

/** `bytes=a-b`, `bytes=a-` or `bytes=-n` of a body of `size`: [start, end] inclusive, or undefined (a whole body). */
const rangeOf = (header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined => {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header ?? '');
  if (match === null || (match[1] === '' && match[2] === '')) return undefined;
  const [from, to] = [match[1]!, match[2]!];
  const start = from === '' ? Math.max(0, size - Number(to)) : Number(from);
  const end = from === '' || to === '' ? size - 1 : Math.min(size - 1, Number(to));
  return start > end || start >= size ? 'unsatisfiable' : [start, end];
};

/** A running `startFileSource`. */
export interface FileSource {
  readonly url: string;
  readonly port: number;
  /** The length of every ranged answer so far, in order (clear it to start counting). */
  readonly rangeBytes: number[];
  /** When (performance.now) the first GET since it was last cleared came. */
  firstGetAt: number | undefined;
  close(): Promise<void>;
}

/**
 * Serves `file` at `/<its base name>` as a storage server does: GET and HEAD, `Accept-Ranges: bytes`, a strong
 * ETag, Last-Modified, 206 with Content-Range (If-Range honoured), 416; anything else 404. `rangeBytes` records the
 * length of every ranged answer, so a suite can tell how big the parts of a download were.
 */
export const startFileSource = async (file: string): Promise<FileSource> => {
  const { size, mtime } = statSync(file);
  const etag = `"${size.toString(16)}-${mtime.getTime().toString(16)}"`;
  const lastModified = mtime.toUTCString();
  const rangeBytes: number[] = [];
  const server = await startHttpServer((request, response) => {
    if (request.method === 'GET') source.firstGetAt ??= performance.now();
    if (request.url !== `/${path.basename(file)}` || !['GET', 'HEAD'].includes(request.method ?? '')) {
      return void response.writeHead(404).end();
    }
    const ifRange = request.headers['if-range'];
    const range =
      ifRange === undefined || ifRange === etag || ifRange === lastModified
        ? rangeOf(request.headers.range, size)
        : undefined;
    const headers = {
      'accept-ranges': 'bytes',
      'content-type': 'application/octet-stream',
      etag,
      'last-modified': lastModified,
    };
    if (range === 'unsatisfiable') {
      return void response.writeHead(416, { ...headers, 'content-range': `bytes */${size}` }).end();
    }
    const [start, end] = range ?? [0, size - 1];
    if (range !== undefined) rangeBytes.push(end - start + 1);
    response.writeHead(range === undefined ? 200 : 206, {
      ...headers,
      'content-length': end - start + 1,
      ...(range === undefined ? {} : { 'content-range': `bytes ${start}-${end}/${size}` }),
    });
    if (request.method === 'HEAD') return void response.end();
    createReadStream(file, { start, end, highWaterMark: MiB }).pipe(response);
  });
  const source: FileSource = {
    url: `${server.url}/${path.basename(file)}`,
    port: server.port,
    rangeBytes,
    firstGetAt: undefined,
    close: () => server.close(),
  };
  return source;
};

/** One timed download: how long it took, when it ended (performance.now), its CPU time, where the file is. */
export interface Timed {
  readonly seconds: number;
  readonly endedAt: number;
  readonly cpuSeconds: number;
  readonly file: string;
}

// AWS_CA_BUNDLE (set on some machines for https) makes rclone's AWS SDK refuse its plain-http transport.
const peerEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'AWS_CA_BUNDLE'));

/** Runs `command` under /usr/bin/time, for its CPU time (user and system, its children's included). */
const timed = async (file: string, command: string, args: ReadonlyArray<string>): Promise<Timed> => {
  const times = path.join(path.dirname(file), '.times');
  const started = performance.now();
  await run('/usr/bin/time', ['-f', '%U %S', '-o', times, command, ...args], {
    timeout: peerTimeoutMs,
    env: peerEnv,
  });
  const endedAt = performance.now();
  const [user, system] = readFileSync(times, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
  return { seconds: (endedAt - started) / 1000, endedAt, cpuSeconds: user! + system!, file };
};

/** The undici-only lane (bench/undici-ranges.ts): one undici Pool of 8 connections, writes inline. */
export const undiciOnly = (url: string, dir: string, bytes: number): Promise<Timed> => {
  const file = path.join(dir, 'model.bin');
  const lane = path.join(__dirname, 'undici-ranges.js');
  return timed(file, process.execPath, [lane, url, file, String(bytes), '8']);
};

/**
 * aria2c, 8 connections, splitting down to 1 MiB ranges. `--file-allocation=none`: aria2's default (`prealloc`)
 * writes the whole file with zeros first, a cost no other downloader here pays.
 */
export const aria2c = (url: string, dir: string): Promise<Timed> =>
  timed(path.join(dir, 'model.bin'), 'aria2c', [
    ...['-x', '8', '-s', '8', '-k', '1M', '--file-allocation=none', '--quiet=true', '--no-conf=true'],
    ...['--allow-overwrite=true', '--auto-file-renaming=false', '-d', dir, '-o', 'model.bin', url],
  ]);

/** An S3 bucket rclone reaches through flags alone (no config file). */
export interface S3Remote {
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** rclone copy of `<http base>/model.bin` or of `s3://<bucket>/model.bin`, over 8 ranged streams. */
export const rclone = (
  from: { readonly httpBase: string } | { readonly s3: S3Remote; readonly bucket: string },
  dir: string,
): Promise<Timed> => {
  const source =
    'httpBase' in from
      ? ['--http-url', `${from.httpBase}/`, ':http:model.bin']
      : [
          ...['--s3-provider', 'Other', '--s3-endpoint', from.s3.endpoint, '--s3-force-path-style'],
          ...['--s3-access-key-id', from.s3.accessKeyId, '--s3-secret-access-key', from.s3.secretAccessKey],
          `:s3:${from.bucket}/model.bin`,
        ];
  return timed(path.join(dir, 'model.bin'), 'rclone', [
    ...['copy', '--config', '', '-q', ...source, dir],
    ...['--multi-thread-streams', '8', '--multi-thread-cutoff', '1M'],
  ]);
};

/** How modelsync is run for one measurement. */
export interface AgentRun {
  readonly storageUri: string;
  /** Models listed, all with `storageUri` (a second engineer's dedup should fetch it once). */
  readonly models: number;
  readonly args?: ReadonlyArray<string>;
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/** What the agent did: start → the last model's load request, its peak RSS (VmHWM), the first model's file. */
export interface AgentTimed extends Timed {
  readonly peakRssBytes: number;
}

/** The CPU time (user and system) process `pid` has used so far. */
export const cpuSecondsOf = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

const vmHwmBytes = (pid: number): number => {
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? NaN) * 1024;
};

/**
 * Starts the real agent (node src/cli.js, the image's Node.js flags, sync mode) on a models.json of `models`
 * entries beside a V2 stand-in and times it from the spawn to the last load request; VmHWM is read then, before it
 * is stopped.
 */
export const timeAgent = async (
  root: string,
  { storageUri, models, args = [], env = {}, timeoutMs }: AgentRun,
): Promise<AgentTimed> => {
  const [configDir, modelDir] = [path.join(root, 'config'), path.join(root, 'models')];
  const loads = loadArrivals();
  const standIn = await startV2ModelServer({ modelDir, onRequest: loads.observe });
  const names = Array.from({ length: models }, (_, i) => modelName(i));
  atomicWrite(configDir, {
    'models.json': JSON.stringify(
      names.map((name) => ({ modelName: name, modelSpec: { storageUri, framework: 'sklearn' } })),
    ),
  });
  const started = performance.now();
  const where = ['--config-dir', configDir, '--model-dir', modelDir, '--server-url', standIn.url];
  const agent = startAgentProcess([...where, '--log-level', 'warn', ...args], { env });
  try {
    const arrivals = await Promise.all(names.map((name) => loads.next(name, timeoutMs)));
    const peakRssBytes = vmHwmBytes(agent.child.pid!);
    const cpuSeconds = cpuSecondsOf(agent.child.pid!);
    return {
      seconds: (Math.max(...arrivals) - started) / 1000,
      endedAt: Math.max(...arrivals),
      cpuSeconds,
      file: path.join(modelDir, names[0]!, 'model.bin'),
      peakRssBytes,
    };
  } catch (error) {
    throw new Error(`${String(error)}\n${agent.transcript(10)}`, { cause: error });
  } finally {
    await stopProcess(agent);
    await standIn.close();
  }
};

/** One download as the suite records it: how long, its CPU time, and what went through the relay. */
export interface Download {
  readonly seconds: number;
  /** From the source's first GET to the file complete (no source of ours: undefined). */
  readonly downloadSeconds: number | undefined;
  readonly cpuSeconds: number;
  /** What the relay counted for it (0 without a relay). */
  readonly relayedBytes: number;
  readonly connections: number;
  readonly peakRssBytes?: number;
}

/**
 * Runs `fetch` into a fresh dir under `root`, checks the copy, and reads the relay's counts for it (and `source`'s
 * first GET, when the file comes from a source of ours).
 */
export const download = async (
  root: string,
  label: string,
  bytes: number,
  relay: RelayProcess | undefined,
  fetch: (dir: string) => Promise<Timed & { peakRssBytes?: number }>,
  source?: FileSource,
): Promise<Download> => {
  const dir = mkdtempSync(path.join(root, 'run-'));
  try {
    settleDisk();
    await relay?.reset();
    if (source !== undefined) source.firstGetAt = undefined;
    const timed = await fetch(dir);
    const firstGetAt = source?.firstGetAt;
    checkCopy(timed.file, bytes);
    const stats = await relay?.stats();
    console.log(
      `  ${label}: ${timed.seconds.toFixed(2)} s, ${(bytes / 1e6 / timed.seconds).toFixed(0)} MB/s`,
    );
    return {
      seconds: timed.seconds,
      downloadSeconds: firstGetAt === undefined ? undefined : (timed.endedAt - firstGetAt) / 1000,
      cpuSeconds: timed.cpuSeconds,
      relayedBytes: stats?.bytesToClients ?? 0,
      connections: stats?.connections ?? 0,
      ...(timed.peakRssBytes !== undefined ? { peakRssBytes: timed.peakRssBytes } : {}),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** The tools of one comparison, each run `runs` times, interleaved (each round starting one further on). */
export const compare = async (
  rounds: number,
  root: string,
  bytes: number,
  relay: RelayProcess | undefined,
  tools: ReadonlyArray<readonly [string, (dir: string) => Promise<Timed>]>,
  source?: FileSource,
): Promise<Map<string, Download[]>> => {
  const runs = new Map(tools.map(([tool]) => [tool, [] as Download[]]));
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < tools.length; i++) {
      const [tool, fetch] = tools[(round + i) % tools.length]!;
      runs.get(tool)!.push(await download(root, `${tool} run ${round + 1}`, bytes, relay, fetch, source));
    }
  }
  return runs;
};
