/**
 * Suite proxy: reverseProxy behind boundedServer vs the KServe Go agent it replaces and a bare node:http pipe proxy
 * (the floor: what Node itself costs), interleaved in one run: latency, CPU, throughput, memory, cut answers.
 */
import { Agent } from 'node:http';
import { sleep } from '../src/testing/wait';
import { procRssBytes } from './agent-fixture';
import { cpuSecondsOf } from './parallel-peers';
import { kserveAgentMissing } from './kserve-agent';
import { crowd, exchange, noTally, tallied, type Exchange, type Tally } from './proxy-load';
import {
  block,
  inferAnswer,
  inferBody,
  startProxyProcess,
  startUpstream,
  tensorBytes,
  tensorPath,
  type ProxyKind,
  type ProxyProcess,
} from './proxy-peers';
import { proxyReport, type Measured, type Plan, type Through } from './proxy-report';
import type { RunOptions, Suite, SuiteResult } from './suite';

const MiB = 2 ** 20;
const common = { warmupRounds: 200, c32Requests: 128, c32: 32, streams: 200, batches: 4 };
const plans: Readonly<Record<'full' | 'quick', Plan>> = {
  full: { ...common, smallRounds: 5000, tensorRounds: 1000, c32Rounds: 8, cutChecks: 100_000, streamMiB: 16 },
  quick: { ...common, smallRounds: 1000, tensorRounds: 200, c32Rounds: 5, cutChecks: 2000, streamMiB: 4 },
};

/** Under the 5 s keep-alive of every proxy's server. */
const clientIdleMs = 4000;

const small: Exchange = { path: '/v2/models/m/infer', body: inferBody, answerBytes: inferAnswer.length };
const tensor: Exchange = { path: tensorPath, body: block, answerBytes: tensorBytes };

/** One exchange at a time to each target in turn, the order turning each round: each target's ms per exchange. */
const roundRobin = async (
  ports: ReadonlyMap<Through, number>,
  what: Exchange,
  rounds: number,
  warmup: number,
) => {
  const order = [...ports.keys()];
  const agents = order.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const samples = new Map<Through, number[]>(order.map((through) => [through, []]));
  const cut = new Map<Through, Tally>(order.map((through) => [through, noTally()]));
  for (let round = 0; round < warmup + rounds; round++)
    for (let i = 0; i < order.length; i++) {
      const at = (round + i) % order.length;
      const through = order[at]!;
      const { ms, outcome } = await exchange(agents[at]!, ports.get(through)!, what);
      tallied(cut.get(through)!, outcome);
      if (outcome === 'whole' && round >= warmup) samples.get(through)!.push(ms);
    }
  for (const agent of agents) agent.destroy();
  return { samples, cut };
};

/**
 * 1 MiB tensors one at a time, round-robin: latency, and each proxy's CPU per tensor, both after `warmup` untimed
 * rounds, as the small calls. The CPU window once began with 20 rounds: a fresh Node proxy's first 20 tensors cost
 * about twice its later ones (compiling its tensor path; 4.5 against 2.1-2.7 ms for modelsync's, 4.0 against
 * 1.7-2.0 for the floor's, counted alone), a cost paid once in a pod's life that the latencies never counted.
 */
const measureTensors = async (
  ports: ReadonlyMap<Through, number>,
  running: ReadonlyMap<ProxyKind, ProxyProcess>,
  rounds: number,
  warmup: number,
) => {
  const warm = await roundRobin(ports, tensor, 0, warmup);
  const cpuBefore = new Map([...running].map(([kind, proxy]) => [kind, cpuSecondsOf(proxy.pid)]));
  const measured = await roundRobin(ports, tensor, rounds, 0);
  const cpuMsPerRequest = new Map(
    [...running].map(([kind, proxy]) => [
      kind,
      ((cpuSecondsOf(proxy.pid) - cpuBefore.get(kind)!) * 1000) / rounds,
    ]),
  );
  for (const [through, tally] of warm.cut) tallied(measured.cut.get(through)!, tally);
  return { ...measured, cpuMsPerRequest };
};

/** `plan.c32Requests` tensors, `plan.c32` at once, per proxy and round, the order turning: MB/s of answers per round. */
const measureThroughput = async (running: ReadonlyMap<ProxyKind, ProxyProcess>, plan: Plan) => {
  const kinds = [...running.keys()];
  const agent = new Agent({ keepAlive: true, maxSockets: plan.c32, timeout: clientIdleMs });
  const speeds = new Map<ProxyKind, number[]>(kinds.map((kind) => [kind, []]));
  const cut = new Map<ProxyKind, Tally>(kinds.map((kind) => [kind, noTally()]));
  for (let round = -1; round < plan.c32Rounds; round++)
    for (let i = 0; i < kinds.length; i++) {
      const kind = kinds[(round + 1 + i) % kinds.length]!;
      const done = await crowd(agent, running.get(kind)!.port, tensor, plan.c32Requests, plan.c32);
      tallied(cut.get(kind)!, done);
      if (round >= 0) speeds.get(kind)!.push(done.bytes / 1e6 / (done.ms / 1000)); // round -1 warms up
    }
  agent.destroy();
  return { speeds, cut };
};

/**
 * `plan.cutChecks` tensors through each HTTP proxy (node-tcp, a byte relay, is no proxy to judge), `plan.c32` at once,
 * in slices taking turns: how many answers were cut.
 */
const measureCuts = async (running: ReadonlyMap<ProxyKind, ProxyProcess>, plan: Plan) => {
  const total = plan.cutChecks;
  const agent = new Agent({ keepAlive: true, maxSockets: plan.c32, timeout: clientIdleMs });
  const judged = [...running].filter(([kind]) => kind !== 'node-tcp');
  const cut = new Map<ProxyKind, Tally>([...running.keys()].map((kind) => [kind, noTally()]));
  const slice = 1000;
  for (let sent = 0; sent < total; sent += slice)
    for (const [kind, proxy] of judged)
      tallied(
        cut.get(kind)!,
        await crowd(agent, proxy.port, tensor, Math.min(slice, total - sent), plan.c32),
      );
  agent.destroy();
  return cut;
};

/** `plan.streams` answers of `plan.streamMiB` at once through a fresh proxy, `plan.batches` times: its idle RSS and each batch's peak. */
const measureMemory = async (kind: ProxyKind, upstreamPort: number, plan: Plan) => {
  const proxy = await startProxyProcess(kind, upstreamPort);
  // A socket idle between batches is dropped before the server's 5 s keep-alive can close it under a request.
  const agent = new Agent({ keepAlive: true, maxSockets: plan.streams, timeout: clientIdleMs });
  try {
    await crowd(agent, proxy.port, { path: '/mib', answerBytes: MiB }, 32, 8); // warm: code compiled, pools filled
    await sleep(500);
    const idleMiB = procRssBytes(proxy.pid) / MiB;
    const peaksMiB: number[] = [];
    const streamed: Exchange = { path: `/stream/${plan.streamMiB}`, answerBytes: plan.streamMiB * MiB };
    for (let batch = 0; batch < plan.batches; batch++) {
      let peak = procRssBytes(proxy.pid);
      const sampler = setInterval(() => (peak = Math.max(peak, procRssBytes(proxy.pid))), 50);
      const done = await crowd(agent, proxy.port, streamed, plan.streams, plan.streams).finally(() =>
        clearInterval(sampler),
      );
      if (done.short + done.failed > 0) throw new Error(`${kind}: ${done.short + done.failed} streams cut`);
      peaksMiB.push(Math.max(peak, procRssBytes(proxy.pid)) / MiB);
    }
    return { idleMiB, peaksMiB };
  } finally {
    agent.destroy();
    proxy.stop();
  }
};

const run = async ({ quick }: RunOptions): Promise<SuiteResult> => {
  const plan = quick ? plans.quick : plans.full;
  const goMissing = kserveAgentMissing();
  const kinds: ReadonlyArray<ProxyKind> =
    goMissing === undefined
      ? ['floor', 'node-tcp', 'modelsync', 'kserve-go']
      : ['floor', 'node-tcp', 'modelsync'];
  const upstream = await startUpstream();
  const running = new Map<ProxyKind, ProxyProcess>();
  try {
    for (const kind of kinds) running.set(kind, await startProxyProcess(kind, upstream.port));
    const ports = new Map<Through, number>([
      ['direct', upstream.port],
      ...[...running].map(([kind, p]) => [kind, p.port] as const),
    ]);
    const rss = (): Map<ProxyKind, number> =>
      new Map([...running].map(([kind, p]) => [kind, procRssBytes(p.pid) / MiB]));
    const smalls = await roundRobin(ports, small, plan.smallRounds, plan.warmupRounds);
    await sleep(500);
    const idleRssMiB = rss();
    const tensors = await measureTensors(ports, running, plan.tensorRounds, plan.warmupRounds);
    const throughput = await measureThroughput(running, plan);
    const loadedRssMiB = rss();
    const cuts = await measureCuts(running, plan);
    for (const proxy of running.values()) proxy.stop();
    const memory = new Map<ProxyKind, Awaited<ReturnType<typeof measureMemory>>>();
    for (const kind of kinds) memory.set(kind, await measureMemory(kind, upstream.port, plan));
    const measured: Measured = { kinds, smalls, tensors, throughput, idleRssMiB, loadedRssMiB, cuts, memory };
    return proxyReport(measured, plan, goMissing);
  } finally {
    for (const proxy of running.values()) proxy.stop();
    await upstream.close();
  }
};

/** The proxy suite. */
export const proxySuite: Suite = {
  name: 'proxy',
  description:
    "modelsync's reverse proxy (reverseProxy behind boundedServer, as the agent port mounts it) vs the KServe Go " +
    'agent it replaces, a bare node:http pipe proxy (the floor) and direct requests to the same upstream: added ' +
    'latency of ~1 KiB inference calls and of 1 MiB tensors, CPU per tensor, throughput at c32, RSS, cut answers.',
  run,
};
