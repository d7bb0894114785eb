/**
 * Suite decode-diff: JSON.parse vs decodeConfig vs the agent's configDecoder vs decodeConfig + diff for models.json of
 * 1k, 10k and 100k models.
 */
import * as E from 'fp-ts/Either';
import { getHeapStatistics } from 'node:v8';
import { configDecoder } from '../src/core/config-decoder';
import { decodeConfig } from '../src/core/decode-config';
import { diff } from '../src/core/diff';
import type { Snapshot } from '../src/core/snapshot';
import { seededRandom } from '../src/testing/seeded-random';
import {
  round3,
  runChildForReport,
  summarize,
  timeRuns,
  type Check,
  type Row,
  type RunOptions,
  type Suite,
} from './suite';

const file = '/etc/modelsync/models.json';
const frameworks = ['sklearn', 'xgboost', 'lightgbm', 'pytorch', 'tensorflow', 'onnx', 'triton'];
const memories = ['512Mi', '1Gi', '0.5', '256Mi', '2Gi', '1500M', '4Gi', '768Mi'];
const budgetMs = 1000;
const budgetModels = 100_000;

interface Entry {
  modelName: string;
  modelSpec: { storageUri: string; framework?: string; memory?: string };
}

/** A models.json update and the ops diff must find for it. */
export interface ConfigPair {
  readonly previousText: string;
  readonly nextText: string;
  readonly expectedRemoves: number;
  readonly expectedAdds: number;
}

/**
 * models.json with `count` models (`model-000123`, s3 URIs, a few frameworks, memory like "512Mi"; a few
 * entries omit framework or memory), and an update of it where ~1% of the models change spec, ~0.5% are
 * removed and ~0.5% are added at the end.
 */
export const configPair = (count: number, seed = 20240601): ConfigPair => {
  const random = seededRandom(seed);
  const pick = <T>(values: ReadonlyArray<T>): T => values[Math.floor(random() * values.length)]!;
  const entryOf = (index: number): Entry => {
    const modelName = `model-${String(index).padStart(6, '0')}`;
    const team = `team-${String(index % 40).padStart(2, '0')}`;
    const storageUri = `s3://ml-models-prod/${team}/${modelName}/v${1 + Math.floor(random() * 5)}/`;
    const roll = random();
    return {
      modelName,
      modelSpec: {
        storageUri,
        ...(roll < 0.97 ? { framework: pick(frameworks) } : {}),
        ...(roll > 0.05 ? { memory: pick(memories) } : {}),
      },
    };
  };
  const previous = Array.from({ length: count }, (_, index) => entryOf(index));
  const changed = Math.round(count * 0.01);
  const removed = Math.round(count * 0.005);
  const added = Math.round(count * 0.005);
  // A partial Fisher-Yates shuffle picks distinct entries to change and to remove.
  const order = Array.from({ length: count }, (_, index) => index);
  for (let i = 0; i < changed + removed; i++) {
    const j = i + Math.floor(random() * (count - i));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const toChange = new Set(order.slice(0, changed));
  const toRemove = new Set(order.slice(changed, changed + removed));
  const next: Entry[] = [];
  previous.forEach((entry, index) => {
    if (toRemove.has(index)) return;
    if (!toChange.has(index)) {
      next.push(entry);
      return;
    }
    // Versions are v1..v5 and no entry has 3Gi, so either change is a real change of spec.
    const spec =
      index % 2 === 0
        ? { ...entry.modelSpec, storageUri: entry.modelSpec.storageUri.replace(/\/v\d+\/$/, '/v9/') }
        : { ...entry.modelSpec, memory: '3Gi' };
    next.push({ modelName: entry.modelName, modelSpec: spec });
  });
  for (let i = 0; i < added; i++) next.push(entryOf(count + i));
  return {
    previousText: JSON.stringify(previous, null, 2),
    nextText: JSON.stringify(next, null, 2),
    expectedRemoves: removed,
    expectedAdds: changed + added,
  };
};

/** The snapshot `text` decodes to; throws if it does not decode (the generator is broken). */
export const snapshotOfText = (text: string): Snapshot => {
  const decoded = decodeConfig(file, text);
  if (E.isLeft(decoded)) throw new Error(`benchmark input does not decode: ${JSON.stringify(decoded.left)}`);
  return decoded.right;
};

/** Decodes `text` and diffs it against `previous`, as the pipeline does on every accepted change. */
export const decodeAndDiff = (previous: Snapshot, text: string): ReturnType<typeof diff> =>
  diff(previous, snapshotOfText(text));

interface Size {
  readonly models: number;
  readonly warmup: number;
  readonly runs: number;
}

const fullSizes: ReadonlyArray<Size> = [
  { models: 1_000, warmup: 10, runs: 30 },
  { models: 10_000, warmup: 5, runs: 30 },
  { models: 100_000, warmup: 2, runs: 10 },
];
const quickSizes: ReadonlyArray<Size> = [
  { models: 1_000, warmup: 5, runs: 15 },
  { models: 10_000, warmup: 3, runs: 15 },
  { models: 100_000, warmup: 1, runs: 5 },
];
/** The largest size runs in a child with Node's default heap: proof that it fits, not only a time. */
const millionSize: Size = { models: 1_000_000, warmup: 1, runs: 3 };
const millionTimeoutMs = 600_000;
/** P2: decode + diff at most this many times JSON.parse of the same text. */
const maxXJsonParse = 2.5;
/** P2 "linear": xJsonParse at the largest size at most this many times xJsonParse at 10k models. */
const maxLinearGrowth = 1.2;

/** What measuring one size gives: its rows and a note. */
interface SizeResult {
  readonly rows: Row[];
  readonly note: string;
  /** The highest heapUsed seen after a measured round, in bytes. */
  readonly peakHeapUsedBytes: number;
}

/** Times the four steps on a `size.models` config and its update, round-robin. */
const measureSize = ({ models, warmup, runs }: Size): SizeResult => {
  const pair = configPair(models);
  const previous = snapshotOfText(pair.previousText);
  const next = snapshotOfText(pair.nextText);
  const ops = decodeAndDiff(previous, pair.nextText);
  const removes = ops.filter((op) => op._tag === 'Remove').length;
  if (removes !== pair.expectedRemoves || ops.length - removes !== pair.expectedAdds) {
    throw new Error(`diff found ${removes} removes and ${ops.length - removes} adds for ${models} models`);
  }
  let peakHeapUsedBytes = process.memoryUsage().heapUsed;
  const withHeap = (fn: () => unknown) => (): unknown => {
    const result = fn();
    peakHeapUsedBytes = Math.max(peakHeapUsedBytes, process.memoryUsage().heapUsed);
    return result;
  };
  // What the agent runs (src/core/config-decoder.ts): each call decodes the other text of the pair, after it.
  const decoder = configDecoder();
  let flip = false;
  const fromTheOther = (): unknown => {
    flip = !flip;
    return decoder(file, flip ? pair.nextText : pair.previousText);
  };
  fromTheOther();
  const steps: Array<[string, () => unknown]> = [
    ['JSON.parse', () => JSON.parse(pair.nextText) as unknown],
    ['decodeConfig', () => decodeConfig(file, pair.nextText)],
    ['configDecoder, after the other version', fromTheOther],
    ['decodeConfig + diff', () => decodeAndDiff(previous, pair.nextText)],
    ['diff alone', () => diff(previous, next)],
  ];
  const timings = timeRuns(
    steps.map(([, fn]) => withHeap(fn)),
    warmup,
    runs,
  );
  const parseMedian = summarize(timings[0]!).median;
  const rows = steps.map(([step], i): Row => {
    const summary = summarize(timings[i]!);
    return {
      models,
      step,
      runs: summary.runs,
      medianMs: summary.median,
      p90Ms: summary.p90,
      minMs: summary.min,
      maxMs: summary.max,
      usPerModel: round3((summary.median * 1000) / models),
      xJsonParse: round3(summary.median / parseMedian),
    };
  });
  const note =
    `${models} models: models.json is ${(pair.nextText.length / 1e6).toFixed(2)} MB; ` +
    `the update yields ${removes} Remove and ${ops.length - removes} Add ops.`;
  return { rows, note, peakHeapUsedBytes };
};

/** What the 1M-model child reports: its rows, or how it failed, and its heap. */
interface MillionReport extends SizeResult {
  readonly heapLimitBytes: number;
}

/** The child: measures one size with the default heap and reports over IPC. */
const child = (): void => {
  const size = { ...millionSize, models: Number(process.argv[3] ?? millionSize.models) };
  const result = measureSize(size);
  const report: MillionReport = { ...result, heapLimitBytes: getHeapStatistics().heap_size_limit };
  process.send!(report, () => process.disconnect());
};

/** Runs the 1M size in a child with no heap flags; undefined (and the error logged) when it dies. */
const runMillion = async (): Promise<MillionReport | Error> => {
  console.log(`  ${millionSize.models} models in a child with the default heap`);
  try {
    return await runChildForReport<MillionReport>(
      __filename,
      ['--child', String(millionSize.models)],
      millionTimeoutMs,
      `decode-diff ${millionSize.models} models`,
    );
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
};

const xJsonParseOf = (rows: ReadonlyArray<Row>, models: number): number =>
  Number(
    rows.find((row) => row['models'] === models && row['step'] === 'decodeConfig + diff')?.['xJsonParse'],
  );

/** The decode-diff suite. */
export const decodeDiffSuite: Suite = {
  name: 'decode-diff',
  description:
    'Time to turn models.json into ops: JSON.parse alone (the floor), decodeConfig (parse + io-ts + snapshot), ' +
    'decodeConfig + diff against the previous snapshot (1% changed, 0.5% removed, 0.5% added), and diff alone; ' +
    '1k to 100k models in-process, 1M (full mode) in a child with the default heap.',
  run: async ({ quick }: RunOptions) => {
    const rows: Row[] = [];
    const notes: string[] = [];
    for (const size of quick ? quickSizes : fullSizes) {
      console.log(`  ${size.models} models`);
      const result = measureSize(size);
      rows.push(...result.rows);
      notes.push(result.note);
    }
    const million = quick ? undefined : await runMillion();
    if (million !== undefined && !(million instanceof Error)) {
      rows.push(...million.rows);
      notes.push(million.note);
    }
    const sizes = [...new Set(rows.map((row) => Number(row['models'])))];
    const largest = Math.max(...sizes);
    const checks: Check[] = sizes.map((models) => {
      const ratio = xJsonParseOf(rows, models);
      return {
        name: `P2 ${models} models: decodeConfig + diff ≤ ${maxXJsonParse}x JSON.parse`,
        withinBudget: ratio <= maxXJsonParse,
        ratio,
        better: 'lower',
      };
    });
    const growth = round3(xJsonParseOf(rows, largest) / xJsonParseOf(rows, 10_000));
    checks.push({
      name: `P2 linear: xJsonParse at ${largest} models ≤ ${maxLinearGrowth}x xJsonParse at 10000`,
      withinBudget: growth <= maxLinearGrowth,
      ratio: growth,
      better: 'lower',
    });
    const budgetRow = rows.find(
      (row) => row['models'] === budgetModels && row['step'] === 'decodeConfig + diff',
    );
    if (budgetRow !== undefined) {
      checks.push({
        name: `${budgetModels} models: decodeConfig + diff, median under ${budgetMs} ms`,
        budgetMs,
        medianMs: budgetRow['medianMs']!,
        p90Ms: budgetRow['p90Ms']!,
        withinBudget: Number(budgetRow['medianMs']) < budgetMs,
      });
    }
    if (million !== undefined) {
      const failed = million instanceof Error;
      checks.push({
        name: `P2 ${millionSize.models} models decode + diff in a child with the default heap`,
        withinBudget: !failed,
        heapLimitMiB: failed ? null : round3(million.heapLimitBytes / 2 ** 20),
        peakHeapUsedMiB: failed ? null : round3(million.peakHeapUsedBytes / 2 ** 20),
        error: failed ? million.message.split('\n')[0]! : null,
      });
    }
    notes.push(
      'Times are wall-clock ms per call, after untimed warm-up rounds, garbage collection included; the ' +
        'steps run round-robin so drift hits all alike. ' +
        'xJsonParse = median / median of JSON.parse of the same text (the floor); usPerModel = median µs / model.',
      `Linear means the time per model grows no faster than JSON.parse's own: the check divides xJsonParse at the ` +
        `largest size by xJsonParse at 10k models (1k is dominated by fixed costs and fits in the CPU caches).`,
      `The ${millionSize.models}-model size (full mode) runs in a child process started without heap flags, so ` +
        "it proves the decode fits Node's default heap; its peakHeapUsed includes the bench's own generated " +
        'texts (two of ~190 MB) and the previous snapshot.',
    );
    return { rows, checks, notes };
  },
};

if (require.main === module && process.argv[2] === '--child') child();
