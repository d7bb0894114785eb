/** Suite proxy: reverseProxy behind boundedServer vs a bare node:http pipe proxy (the floor): latency, throughput, memory. */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { sleep } from '../src/testing/wait';
import { procRssBytes } from './agent-fixture';
import { inferAnswer, inferBody, startProxyProcess, startUpstream, type ProxyKind } from './proxy-peers';
import {
  round3,
  summarize,
  type Check,
  type Row,
  type RunOptions,
  type Suite,
  type SuiteResult,
} from './suite';

const MiB = 2 ** 20;
const sizes = {
  full: { latencyRounds: 5000, throughputRounds: 8, streams: 200, streamMiB: 16, batches: 4 },
  quick: { latencyRounds: 1000, throughputRounds: 6, streams: 200, streamMiB: 4, batches: 4 },
};
type Size = (typeof sizes)['quick'];
const warmupRounds = 200;
/** 1 MiB answers: this many per round and proxy, this many at once. */
const throughputRequests = 64;
const throughputConcurrency = 8;
/** The targets. */
const maxAddedMedianMs = 0.2;
const maxAddedP99Ms = 1;
const minThroughputShare = 0.9;
/** Over the bare pipe's own growth under the same streams (both are V8's external buffers awaiting a collection). */
const maxRssGrowthMiB = 32;
const maxBatchGrowthMiB = 32;

/** Under the 5 s keep-alive of both proxies' servers. */
const clientIdleMs = 4000;

type Through = 'direct' | 'floor' | 'modelsync';

const proxies: ReadonlyArray<ProxyKind> = ['floor', 'modelsync'];

/** One request to `port` on `agent` (POST: the inference call); resolves with the ms to its last byte and its bytes. */
const timed = (agent: Agent, port: number, urlPath: string): Promise<{ ms: number; bytes: number }> =>
  new Promise((resolve, reject) => {
    const started = performance.now();
    const method = urlPath.startsWith('/v2/') ? 'POST' : 'GET';
    const client = request({ host: '127.0.0.1', port, method, path: urlPath, agent }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('error', reject);
      res.on('end', () =>
        res.statusCode === 200
          ? resolve({ ms: performance.now() - started, bytes })
          : reject(new Error(`${urlPath}: ${res.statusCode}`)),
      );
    });
    client.on('error', reject);
    if (method === 'POST') client.setHeader('Content-Type', 'application/json');
    client.end(method === 'POST' ? inferBody : undefined);
  });

/** `total` requests of `urlPath`, `concurrency` at once; resolves with the bytes and ms they took. */
const crowd = async (agent: Agent, port: number, urlPath: string, total: number, concurrency: number) => {
  const started = performance.now();
  let next = 0;
  let bytes = 0;
  const worker = async (): Promise<void> => {
    while (next++ < total) {
      const answer = await timed(agent, port, urlPath); // not `bytes += await …`: that adds to a stale sum
      bytes += answer.bytes;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { bytes, ms: performance.now() - started };
};

/** Small requests one at a time, round-robin over direct, floor and modelsync, the order turning each round. */
const measureLatency = async (ports: Record<Through, number>, rounds: number) => {
  const order: ReadonlyArray<Through> = ['direct', ...proxies];
  const agents = order.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const samples: Record<Through, number[]> = { direct: [], floor: [], modelsync: [] };
  for (let round = 0; round < warmupRounds + rounds; round++) {
    for (let i = 0; i < order.length; i++) {
      const at = (round + i) % order.length;
      const { ms } = await timed(agents[at]!, ports[order[at]!], '/v2/models/m/infer');
      if (round >= warmupRounds) samples[order[at]!].push(ms);
    }
  }
  for (const agent of agents) agent.destroy();
  return samples;
};

/** 1 MiB answers, `throughputConcurrency` at once, the two proxies alternating per round: MB/s per round. */
const measureThroughput = async (ports: Record<Through, number>, rounds: number) => {
  const agent = new Agent({ keepAlive: true, maxSockets: throughputConcurrency });
  const speeds: Record<ProxyKind, number[]> = { floor: [], modelsync: [] };
  for (let round = -1; round < rounds; round++) {
    for (const kind of round % 2 === 0 ? proxies : [...proxies].reverse()) {
      const { bytes, ms } = await crowd(
        agent,
        ports[kind],
        '/mib',
        throughputRequests,
        throughputConcurrency,
      );
      if (round >= 0) speeds[kind].push(bytes / 1e6 / (ms / 1000)); // round -1 warms both up
    }
  }
  agent.destroy();
  return speeds;
};

/** `streams` answers of `streamMiB` at once through a fresh proxy, `batches` times: its idle RSS and each batch's peak. */
const measureMemory = async (kind: ProxyKind, upstreamPort: number, size: Size) => {
  const proxy = await startProxyProcess(kind, upstreamPort);
  // A socket idle between batches is dropped before the server's 5 s keep-alive can close it under a request.
  const agent = new Agent({ keepAlive: true, maxSockets: size.streams, timeout: clientIdleMs });
  try {
    await crowd(agent, proxy.port, '/mib', 32, 8); // warm: code compiled, pools filled
    await sleep(500);
    const idleMiB = procRssBytes(proxy.pid) / MiB;
    const peaksMiB: number[] = [];
    for (let batch = 0; batch < size.batches; batch++) {
      let peak = procRssBytes(proxy.pid);
      const sampler = setInterval(() => (peak = Math.max(peak, procRssBytes(proxy.pid))), 50);
      const streamed = `/stream/${size.streamMiB}`;
      const { bytes } = await crowd(agent, proxy.port, streamed, size.streams, size.streams).finally(() =>
        clearInterval(sampler),
      );
      if (bytes !== size.streams * size.streamMiB * MiB) throw new Error(`${kind}: ${bytes} bytes streamed`);
      peaksMiB.push(Math.max(peak, procRssBytes(proxy.pid)) / MiB);
    }
    return { idleMiB, peaksMiB };
  } finally {
    agent.destroy();
    proxy.stop();
  }
};

type Memory = Awaited<ReturnType<typeof measureMemory>>;

/** The rows and checks of one run. */
const report = (
  latency: Record<Through, number[]>,
  throughput: Record<ProxyKind, number[]>,
  memory: Record<ProxyKind, Memory>,
  size: Size,
): SuiteResult => {
  const lat = {
    direct: summarize(latency.direct),
    floor: summarize(latency.floor),
    modelsync: summarize(latency.modelsync),
  };
  const added = (kind: ProxyKind, at: 'median' | 'p99') => round3(lat[kind][at]! - lat.direct[at]!);
  const speed = (kind: ProxyKind) => summarize(throughput[kind]).median;
  const growth = (kind: ProxyKind) => round3(Math.max(...memory[kind].peaksMiB) - memory[kind].idleMiB);
  // A leak shows as a peak that keeps rising; GC timing alone moves a peak either way.
  const batchGrowth = (kind: ProxyKind) =>
    round3(memory[kind].peaksMiB.at(-1)! - Math.max(...memory[kind].peaksMiB.slice(0, -1)));
  const rows: Row[] = [
    { through: 'direct', medianMs: lat.direct.median, p90Ms: lat.direct.p90, p99Ms: lat.direct.p99 ?? null },
    ...proxies.map((kind) => ({
      through: kind,
      medianMs: lat[kind].median,
      p90Ms: lat[kind].p90,
      p99Ms: lat[kind].p99 ?? null,
      addedMedianMs: added(kind, 'median'),
      addedP99Ms: added(kind, 'p99'),
      mibAnswersMBps: round3(speed(kind)),
      idleRssMiB: round3(memory[kind].idleMiB),
      batchPeaksMiB: memory[kind].peaksMiB.map((peak) => peak.toFixed(0)).join(' / '),
      rssGrowthMiB: growth(kind),
      lastBatchOverEarlierMiB: batchGrowth(kind),
    })),
  ];
  const checks: Check[] = [
    {
      name: `added latency at the median ≤ the floor's + ${maxAddedMedianMs} ms (ratio: median / floor's)`,
      withinBudget: added('modelsync', 'median') <= added('floor', 'median') + maxAddedMedianMs,
      ratio: round3(lat.modelsync.median / lat.floor.median),
      better: 'lower',
    },
    {
      name: `p99 ≤ the floor's p99 + ${maxAddedP99Ms} ms (ratio: p99 / floor's)`,
      withinBudget: lat.modelsync.p99! <= lat.floor.p99! + maxAddedP99Ms,
      ratio: round3(lat.modelsync.p99! / lat.floor.p99!),
      better: 'lower',
    },
    {
      name: `1 MiB answers: throughput ≥ ${minThroughputShare}x the floor's`,
      withinBudget: speed('modelsync') >= minThroughputShare * speed('floor'),
      ratio: round3(speed('modelsync') / speed('floor')),
      better: 'higher',
    },
    {
      name: `${size.streams} concurrent streamed answers: RSS growth ≤ the floor's + ${maxRssGrowthMiB} MiB`,
      withinBudget: growth('modelsync') <= growth('floor') + maxRssGrowthMiB,
      rssGrowthMiB: growth('modelsync'),
      floorRssGrowthMiB: growth('floor'),
    },
    {
      name: `no growth with the bytes: the last batch's peak RSS ≤ the earlier ones' + ${maxBatchGrowthMiB} MiB`,
      withinBudget: batchGrowth('modelsync') <= maxBatchGrowthMiB,
      lastBatchOverEarlierMiB: batchGrowth('modelsync'),
    },
  ];
  const notes = [
    "Each proxy runs in a child of its own (modelsync with the agent's Node.js flags, the floor with none); the " +
      'upstream (node:http) and the clients run in the bench process, all on 127.0.0.1.',
    `Latency: POST /v2/models/m/infer (${inferBody.length} B in, ${inferAnswer.length} B out), one at a time on a ` +
      `kept-alive connection per target, round-robin with the order turning each round, after ${warmupRounds} ` +
      `untimed rounds; ${lat.direct.runs} per target. added = through the proxy minus direct, same percentile.`,
    `Throughput: ${throughputRequests} GETs of 1 MiB per round, ${throughputConcurrency} at once, the proxies ` +
      'alternating; MB/s = 10^6 bytes per second of wall time, median over the rounds.',
    `Memory: a fresh child per proxy, warmed, idle 0.5 s (idleRssMiB), then ${size.batches} batches of ` +
      `${size.streams} concurrent ${size.streamMiB} MiB answers, VmRSS every 50 ms. Every socket read is a new ` +
      'buffer of up to 64 KiB outside the heap, freed only once V8 collects its wrapper, and V8 lets such ' +
      'external memory grow by tens of MiB before a full collection: the floor grows about as much ' +
      '(floorRssGrowthMiB). A peak that rises batch after batch would be memory growing with the bytes.',
  ];
  return { rows, checks, notes };
};

const run = async ({ quick }: RunOptions): Promise<SuiteResult> => {
  const size = quick ? sizes.quick : sizes.full;
  const upstream = await startUpstream();
  const started = await Promise.all(proxies.map((kind) => startProxyProcess(kind, upstream.port)));
  try {
    const [floor, modelsync] = started.map(({ port }) => port) as [number, number];
    const ports = { direct: upstream.port, floor, modelsync };
    const latency = await measureLatency(ports, size.latencyRounds);
    const throughput = await measureThroughput(ports, size.throughputRounds);
    for (const proxy of started) proxy.stop();
    const memory = {
      floor: await measureMemory('floor', upstream.port, size),
      modelsync: await measureMemory('modelsync', upstream.port, size),
    };
    return report(latency, throughput, memory, size);
  } finally {
    for (const proxy of started) proxy.stop();
    await upstream.close();
  }
};

/** The proxy suite. */
export const proxySuite: Suite = {
  name: 'proxy',
  description:
    "modelsync's reverse proxy (reverseProxy behind boundedServer, as the agent port mounts it) vs a bare " +
    'node:http pipe proxy (the floor) and direct requests to the same upstream: added latency of small ' +
    'inference requests, throughput of 1 MiB answers, RSS under 200 concurrent streamed answers.',
  run,
};
