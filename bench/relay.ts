/**
 * A rate-limited TCP relay on 127.0.0.1 for the parallel-download suite: what the upstream sends each client is held
 * to a per-connection and an all-connections rate (token buckets), counted, and can be cut on one connection mid-way.
 * It runs in a child process of its own (`forkRelay`), so relaying does not take the CPU of the process it feeds.
 */
import { execFile, fork } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';

/** Where the relay forwards to and how fast it lets bytes through to clients (bytes per second; null: unlimited). */
export interface RelayOptions {
  readonly upstreamPort: number;
  readonly upstreamHost?: string;
  /** Default 40e6: one storage connection as a cloud bucket serves it. */
  readonly perConnectionBytesPerSecond?: number | null;
  /** Default 320e6: the node's link. */
  readonly totalBytesPerSecond?: number | null;
}

/**
 * Cut connection number `connection` (1-based, in accept order since the last reset), or whichever gets there
 * first, once `afterBytes` have gone to its client.
 */
export interface RelayCut {
  readonly afterBytes: number;
  readonly connection?: number;
}

/** What the relay has done since it started or was last reset. */
export interface RelayStats {
  /** Bytes relayed to clients (upstream → client), headers included. */
  readonly bytesToClients: number;
  readonly connections: number;
  /** Bytes relayed to each connection's client, in accept order. */
  readonly perConnection: ReadonlyArray<number>;
  /** Which connection was cut, if one was. */
  readonly cutConnection?: number;
}

// Refilled every few ms and allowed a burst of a few ticks, so a late timer (a busy CPU) loses no tokens.
const tickMs = 4;
const burstTicks = 10;

interface Bucket {
  tokens: number;
  readonly bytesPerMs: number;
  readonly burst: number;
}

const bucketOf = (bytesPerSecond: number | null): Bucket | undefined =>
  bytesPerSecond === null
    ? undefined
    : { tokens: 0, bytesPerMs: bytesPerSecond / 1000, burst: (bytesPerSecond / 1000) * tickMs * burstTicks };

interface Counts {
  bytesToClients: number;
  readonly perConnection: number[];
  cutConnection?: number;
}

interface Connection {
  readonly index: number;
  /** The counts when it was accepted: a reset starts new ones, and a connection from before counts in its own. */
  readonly counts: Counts;
  readonly client: Socket;
  readonly upstream: Socket;
  readonly bucket: Bucket | undefined;
  bytes: number;
}

/** The relay, in this process: resolves once it listens. */
export const startRelay = async (options: RelayOptions) => {
  // `??` would take null (no limit) for the default.
  const total = bucketOf(options.totalBytesPerSecond === undefined ? 320e6 : options.totalBytesPerSecond);
  const perConnection =
    options.perConnectionBytesPerSecond === undefined ? 40e6 : options.perConnectionBytesPerSecond;
  const open = new Set<Connection>();
  const paused = new Set<Connection>();
  let counts: Counts = { bytesToClients: 0, perConnection: [] };
  let cut: RelayCut | undefined;

  const hasTokens = (bucket: Bucket | undefined): boolean => bucket === undefined || bucket.tokens > 0;
  const mayFlow = (c: Connection): boolean =>
    hasTokens(c.bucket) && hasTokens(total) && !c.client.writableNeedDrain;
  const resumeIfAllowed = (c: Connection): void => {
    if (!paused.has(c) || !mayFlow(c)) return;
    paused.delete(c);
    c.upstream.resume();
  };

  let refilledAt = performance.now();
  const refill = (): void => {
    const now = performance.now();
    const elapsedMs = now - refilledAt;
    refilledAt = now;
    const fill = (bucket: Bucket | undefined): void => {
      if (bucket !== undefined)
        bucket.tokens = Math.min(bucket.burst, bucket.tokens + bucket.bytesPerMs * elapsedMs);
    };
    fill(total);
    for (const c of open) fill(c.bucket);
    // Rotated, so that under the total limit no connection is always first to take the new tokens.
    const waiting = [...paused];
    const from = waiting.length === 0 ? 0 : Math.floor(Math.random() * waiting.length);
    for (let i = 0; i < waiting.length; i++) resumeIfAllowed(waiting[(from + i) % waiting.length]!);
  };
  const timer = setInterval(refill, tickMs);

  const isCut = (c: Connection, bytes: number): boolean =>
    cut !== undefined &&
    c.counts === counts &&
    (cut.connection === undefined || cut.connection === c.index) &&
    bytes >= cut.afterBytes;

  const relayChunk = (c: Connection, chunk: Buffer): void => {
    const cutHere = isCut(c, c.bytes + chunk.length);
    const piece = cutHere ? chunk.subarray(0, Math.max(0, cut!.afterBytes - c.bytes)) : chunk;
    c.bytes += piece.length;
    c.counts.bytesToClients += piece.length;
    c.counts.perConnection[c.index - 1] = c.bytes;
    if (cutHere) {
      cut = undefined;
      counts.cutConnection = c.index;
      c.client.end(piece);
      c.upstream.destroy();
      return;
    }
    if (c.bucket !== undefined) c.bucket.tokens -= piece.length;
    if (total !== undefined) total.tokens -= piece.length;
    // A chunk is passed on whole and paid for after: the debt is at most one socket read (64 KiB) per connection.
    const flushed = c.client.write(piece);
    if (!flushed || !mayFlow(c)) {
      c.upstream.pause();
      paused.add(c);
    }
  };

  const server = createServer((client) => {
    const upstream = connect(options.upstreamPort, options.upstreamHost ?? '127.0.0.1');
    const c: Connection = {
      index: counts.perConnection.push(0),
      counts,
      client,
      upstream,
      bucket: bucketOf(perConnection),
      bytes: 0,
    };
    open.add(c);
    client.setNoDelay(true);
    const end = (): void => {
      open.delete(c);
      paused.delete(c);
      // An ended client still gets what it was written (an upstream that closed after its answer, or a cut).
      if (!client.writableEnded) client.destroy();
      upstream.destroy();
    };
    client
      .on('error', end)
      .on('close', end)
      .on('drain', () => resumeIfAllowed(c));
    upstream.on('error', end).on('close', end);
    upstream.on('end', () => client.end());
    upstream.on('data', (chunk: Buffer) => relayChunk(c, chunk));
    client.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stats: (): RelayStats => ({
      bytesToClients: counts.bytesToClients,
      connections: counts.perConnection.length,
      perConnection: [...counts.perConnection],
      ...(counts.cutConnection !== undefined ? { cutConnection: counts.cutConnection } : {}),
    }),
    /** Counts from zero and forgets the cut; connections number from 1 again (open ones keep relaying). */
    reset: (): void => {
      counts = { bytesToClients: 0, perConnection: [] };
      cut = undefined;
    },
    cutAfter: (next: RelayCut): void => {
      cut = next;
    },
    close: (): Promise<void> =>
      new Promise<void>((resolve) => {
        clearInterval(timer);
        for (const c of open) c.client.destroy();
        server.close(() => resolve());
      }),
  };
};

/** The relay in its own process, driven over IPC. */
export interface RelayProcess {
  readonly port: number;
  stats(): Promise<RelayStats>;
  reset(): Promise<void>;
  cutAfter(cut: RelayCut): Promise<void>;
  close(): Promise<void>;
}

type Request = { readonly op: 'stats' | 'reset' | 'close' } | { readonly op: 'cut'; readonly cut: RelayCut };
type Command = Request & { readonly id: number };

/** Forks this file as a relay child with `options`; resolves once it listens. */
export const forkRelay = (options: RelayOptions): Promise<RelayProcess> =>
  new Promise((resolve, reject) => {
    const child = fork(path.join(__dirname, 'relay.js'), ['--child', JSON.stringify(options)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: [],
    });
    const waiting = new Map<number, (answer: unknown) => void>();
    let nextId = 0;
    const ask = <T>(command: Request): Promise<T> =>
      new Promise<T>((answered) => {
        const id = nextId++;
        waiting.set(id, answered as (answer: unknown) => void);
        child.send({ ...command, id });
      });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the relay exited with code ${code}`)));
    child.on('message', (message: { id?: number; port?: number; answer?: unknown }) => {
      if (message.id === undefined) {
        resolve({
          port: message.port!,
          stats: () => ask<RelayStats>({ op: 'stats' }),
          reset: () => ask<void>({ op: 'reset' }),
          cutAfter: (cut) => ask<void>({ op: 'cut', cut }),
          close: async () => {
            await ask<void>({ op: 'close' });
            child.disconnect();
          },
        });
        return;
      }
      waiting.get(message.id)?.(message.answer);
      waiting.delete(message.id);
    });
  });

const curl = promisify(execFile);

/**
 * The relay's calibration: `streams` curls at once fetching the first `bytes` of `url`; each one's MB/s (10^6 bytes
 * per second, curl's own average over its transfer).
 */
export const curlSpeeds = (url: string, streams: number, bytes: number): Promise<number[]> =>
  Promise.all(
    Array.from({ length: streams }, async () => {
      const args = ['-s', '-f', '-o', '/dev/null', '-r', `0-${bytes - 1}`, '-w', '%{speed_download}', url];
      return Number((await curl('curl', args)).stdout) / 1e6;
    }),
  );

const child = async (options: RelayOptions): Promise<void> => {
  const relay = await startRelay(options);
  process.on('message', (command: Command) => {
    const answer = (value?: unknown): void => void process.send!({ id: command.id, answer: value ?? null });
    if (command.op === 'stats') answer(relay.stats());
    else if (command.op === 'reset') answer(relay.reset());
    else if (command.op === 'cut') answer(relay.cutAfter(command.cut));
    else void relay.close().then(() => answer());
  });
  process.on('disconnect', () => process.exit(0));
  process.send!({ port: relay.port });
};

if (require.main === module && process.argv[2] === '--child')
  void child(JSON.parse(process.argv[3]!) as RelayOptions);
