/** The rows, checks and notes of the proxy suite, from what bench/proxy.ts measured. */
import { noTally, tallied, type Tally } from './proxy-load';
import { inferAnswer, inferBody, type ProxyKind } from './proxy-peers';
import { round3, summarize, type Check, type Row, type SuiteResult } from './suite';

/** A target of the latency phases: the upstream itself, or a proxy in front of it. */
export type Through = 'direct' | ProxyKind;

/** How much of each phase a run does. */
export interface Plan {
  readonly warmupRounds: number;
  /** ~1 KiB inference calls, one at a time, per target. */
  readonly smallRounds: number;
  /** 1 MiB tensors each way, one at a time, per target. */
  readonly tensorRounds: number;
  /** Rounds of `c32Requests` tensors, `c32` at once, per proxy. */
  readonly c32Rounds: number;
  readonly c32Requests: number;
  readonly c32: number;
  /** Tensors through each proxy only to count cut answers (beside those of the other phases). */
  readonly cutChecks: number;
  /** Memory: `batches` of `streams` concurrent answers of `streamMiB`. */
  readonly streams: number;
  readonly streamMiB: number;
  readonly batches: number;
}

export interface Measured {
  readonly kinds: ReadonlyArray<ProxyKind>;
  readonly smalls: { readonly samples: Map<Through, number[]>; readonly cut: Map<Through, Tally> };
  readonly tensors: {
    readonly samples: Map<Through, number[]>;
    readonly cut: Map<Through, Tally>;
    readonly cpuMsPerRequest: Map<ProxyKind, number>;
  };
  readonly throughput: { readonly speeds: Map<ProxyKind, number[]>; readonly cut: Map<ProxyKind, Tally> };
  readonly idleRssMiB: Map<ProxyKind, number>;
  readonly loadedRssMiB: Map<ProxyKind, number>;
  readonly cuts: Map<ProxyKind, Tally>;
  readonly memory: Map<ProxyKind, { readonly idleMiB: number; readonly peaksMiB: ReadonlyArray<number> }>;
}

/** The targets against the Go agent (issue 29), and against the floor (issue 16). */
const go = { cpuFactor: 1.2, tensorP99Ms: 1, c32Share: 0.9, rssMiB: 32, smallMedianMs: 0.05 };
const floor = { smallMedianMs: 0.2, smallP99Ms: 1, c32Share: 0.9, rssGrowthMiB: 32, batchGrowthMiB: 32 };

export const proxyReport = (m: Measured, plan: Plan, goMissing: string | undefined): SuiteResult => {
  const small = new Map([...m.smalls.samples].map(([through, s]) => [through, summarize(s)]));
  const tensor = new Map([...m.tensors.samples].map(([through, s]) => [through, summarize(s)]));
  const added = (of: typeof small, kind: ProxyKind, at: 'median' | 'p99') =>
    round3(of.get(kind)![at]! - of.get('direct')![at]!);
  const speed = (kind: ProxyKind) => summarize(m.throughput.speeds.get(kind)!).median;
  const cpu = (kind: ProxyKind) => round3(m.tensors.cpuMsPerRequest.get(kind)!);
  const loaded = (kind: ProxyKind) => round3(m.loadedRssMiB.get(kind)!);
  const growth = (kind: ProxyKind) => {
    const { idleMiB, peaksMiB } = m.memory.get(kind)!;
    return round3(Math.max(...peaksMiB) - idleMiB);
  };
  // A leak shows as a peak that keeps rising; GC timing alone moves a peak either way.
  const batchGrowth = (kind: ProxyKind) => {
    const { peaksMiB } = m.memory.get(kind)!;
    return round3(peaksMiB.at(-1)! - Math.max(...peaksMiB.slice(0, -1)));
  };
  const tally = (kind: ProxyKind): Tally => {
    const all = noTally();
    for (const phase of [m.smalls.cut, m.tensors.cut, m.throughput.cut, m.cuts])
      tallied(all, phase.get(kind)!);
    return all;
  };
  const cut = (kind: ProxyKind) => tally(kind).short + tally(kind).failed;
  const withBodies = (kind: ProxyKind) =>
    plan.warmupRounds +
    plan.smallRounds +
    plan.tensorRounds +
    plan.warmupRounds +
    (plan.c32Rounds + 1) * plan.c32Requests +
    (kind === 'node-tcp' ? 0 : plan.cutChecks);
  const rows: Row[] = [
    {
      through: 'direct',
      smallMedianMs: small.get('direct')!.median,
      smallP99Ms: small.get('direct')!.p99 ?? null,
      tensorMedianMs: tensor.get('direct')!.median,
      tensorP99Ms: tensor.get('direct')!.p99 ?? null,
    },
    ...m.kinds.map((kind) => ({
      through: kind,
      smallMedianMs: small.get(kind)!.median,
      smallP99Ms: small.get(kind)!.p99 ?? null,
      tensorMedianMs: tensor.get(kind)!.median,
      tensorP99Ms: tensor.get(kind)!.p99 ?? null,
      smallAddedMedianMs: added(small, kind, 'median'),
      smallAddedP99Ms: added(small, kind, 'p99'),
      tensorAddedMedianMs: added(tensor, kind, 'median'),
      tensorAddedP99Ms: added(tensor, kind, 'p99'),
      cpuMsPerTensor: cpu(kind),
      c32MBps: round3(speed(kind)),
      idleRssMiB: round3(m.idleRssMiB.get(kind)!),
      loadedRssMiB: loaded(kind),
      shortAnswers: tally(kind).short,
      failedAnswers: tally(kind).failed,
      ofAnswers: withBodies(kind),
      streamsRssGrowthMiB: growth(kind),
      lastBatchOverEarlierMiB: batchGrowth(kind),
    })),
  ];
  const vsGo: Check[] =
    goMissing !== undefined
      ? []
      : [
          {
            name: `vs Go: 1 MiB tensors, CPU per request ≤ ${go.cpuFactor}x the Go agent's`,
            withinBudget: cpu('modelsync') <= go.cpuFactor * cpu('kserve-go'),
            ratio: round3(cpu('modelsync') / cpu('kserve-go')),
            better: 'lower',
          },
          {
            name: `vs Go: 1 MiB tensors at c1, added p99 ≤ the Go agent's + ${go.tensorP99Ms} ms (ratio: p99 / Go's)`,
            withinBudget:
              added(tensor, 'modelsync', 'p99') <= added(tensor, 'kserve-go', 'p99') + go.tensorP99Ms,
            ratio: round3(tensor.get('modelsync')!.p99! / tensor.get('kserve-go')!.p99!),
            better: 'lower',
          },
          {
            name: `vs Go: 1 MiB tensors at c${plan.c32}, throughput ≥ ${go.c32Share}x the Go agent's`,
            withinBudget: speed('modelsync') >= go.c32Share * speed('kserve-go'),
            ratio: round3(speed('modelsync') / speed('kserve-go')),
            better: 'higher',
          },
          {
            name: `vs Go: RSS after the load ≤ the Go agent's + ${go.rssMiB} MiB`,
            withinBudget: loaded('modelsync') <= loaded('kserve-go') + go.rssMiB,
            ratio: round3(loaded('modelsync') / loaded('kserve-go')),
            better: 'lower',
          },
          {
            name: `vs Go: ~1 KiB calls at c1, added median ≤ the Go agent's + ${go.smallMedianMs} ms (ratio: median / Go's)`,
            withinBudget:
              added(small, 'modelsync', 'median') <= added(small, 'kserve-go', 'median') + go.smallMedianMs,
            ratio: round3(small.get('modelsync')!.median / small.get('kserve-go')!.median),
            better: 'lower',
          },
        ];
  const checks: Check[] = [
    ...vsGo,
    {
      name: 'no cut answer from modelsync (ratio: answers cut or failed)',
      withinBudget: cut('modelsync') === 0,
      ratio: cut('modelsync'),
      better: 'lower',
      ...(goMissing === undefined
        ? { goShort: tally('kserve-go').short, goFailed: tally('kserve-go').failed }
        : {}),
      of: withBodies('modelsync'),
    },
    {
      name: `vs floor: ~1 KiB calls, added median ≤ the floor's + ${floor.smallMedianMs} ms (ratio: median / floor's)`,
      withinBudget:
        added(small, 'modelsync', 'median') <= added(small, 'floor', 'median') + floor.smallMedianMs,
      ratio: round3(small.get('modelsync')!.median / small.get('floor')!.median),
      better: 'lower',
    },
    {
      name: `vs floor: ~1 KiB calls, p99 ≤ the floor's p99 + ${floor.smallP99Ms} ms (ratio: p99 / floor's)`,
      withinBudget: small.get('modelsync')!.p99! <= small.get('floor')!.p99! + floor.smallP99Ms,
      ratio: round3(small.get('modelsync')!.p99! / small.get('floor')!.p99!),
      better: 'lower',
    },
    {
      name: `vs floor: 1 MiB tensors at c${plan.c32}, throughput ≥ ${floor.c32Share}x the floor's`,
      withinBudget: speed('modelsync') >= floor.c32Share * speed('floor'),
      ratio: round3(speed('modelsync') / speed('floor')),
      better: 'higher',
    },
    {
      name: `${plan.streams} concurrent streamed answers: RSS growth ≤ the floor's + ${floor.rssGrowthMiB} MiB`,
      withinBudget: growth('modelsync') <= growth('floor') + floor.rssGrowthMiB,
      rssGrowthMiB: growth('modelsync'),
      floorRssGrowthMiB: growth('floor'),
    },
    {
      name: `no growth with the bytes: the last batch's peak RSS ≤ the earlier ones' + ${floor.batchGrowthMiB} MiB`,
      withinBudget: batchGrowth('modelsync') <= floor.batchGrowthMiB,
      lastBatchOverEarlierMiB: batchGrowth('modelsync'),
    },
  ];
  return { rows, checks, notes: notes(plan, goMissing, small.get('direct')!.runs) };
};

const notes = (plan: Plan, goMissing: string | undefined, runs: number): string[] => [
  ...(goMissing === undefined ? [] : [`The KServe Go agent's lane is missing: ${goMissing}.`]),
  'Each proxy runs in a process of its own: modelsync with the Node.js flags of its image; the floor (a bare ' +
    "node:http pipe: what node:http costs) and node-tcp (a byte relay of net sockets, no HTTP: what Node's " +
    "sockets alone cost) with none; the Go agent (KServe v0.19.0 cmd/agent) as KServe's webhook starts it. The " +
    'upstream (node:http) and the clients run in the bench process, all on 127.0.0.1.',
  `Small: POST /v2/models/m/infer (${inferBody.length} B in, ${inferAnswer.length} B out), one at a time on a ` +
    'kept-alive connection per target, round-robin over direct and the proxies with the order turning each round, ' +
    `after ${plan.warmupRounds} untimed rounds; ${runs} per target. added = through the proxy minus direct, same percentile.`,
  `Tensor: POST of 1 MiB answered with 1 MiB, likewise round-robin, ${plan.tensorRounds} per target after ` +
    `${plan.warmupRounds} untimed rounds; cpuMsPerTensor = the proxy process's utime + stime (/proc/<pid>/stat) ` +
    "over the timed rounds ÷ their requests (steady state: the untimed rounds hold a Node proxy's first compiles).",
  `c${plan.c32}: ${plan.c32Requests} tensors per round and proxy, ${plan.c32} at once, the proxies taking turns; ` +
    'MB/s = 10^6 answer bytes per second of wall time, median over the rounds. loadedRssMiB: VmRSS right after.',
  'shortAnswers: answers to requests with bodies that stopped before their length (a cut); failedAnswers: no ' +
    `answer (a reset) or not a 200; over every phase and ` +
    `${plan.cutChecks} more tensors at c${plan.c32} per HTTP proxy (not node-tcp).`,
  `Streams: a fresh process per proxy, warmed, idle 0.5 s, then ${plan.batches} batches of ${plan.streams} ` +
    `concurrent ${plan.streamMiB} MiB answers, VmRSS every 50 ms: memory bounded by the streams in flight, not by ` +
    'the bytes (the floor grows about as much; a peak that rises batch after batch would be a leak).',
];
