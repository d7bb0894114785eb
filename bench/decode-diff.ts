/** Suite decode-diff: JSON.parse vs decodeConfig vs decodeConfig + diff for models.json of 1k, 10k and 100k models. */
import { either as E } from 'fp-ts';
import { decodeConfig } from '../src/core/decode-config';
import { diff } from '../src/core/diff';
import type { Snapshot } from '../src/core/snapshot';
import { round3, summarize, timeRuns, type Check, type Row, type Suite } from './suite';
import { seededRandom } from '../src/testing/seeded-random';

const file = '/etc/modelsync/models.json';
const frameworks = ['sklearn', 'xgboost', 'lightgbm', 'pytorch', 'tensorflow', 'onnx', 'triton'];
const memories = ['512Mi', '1Gi', '0.5', '256Mi', '2Gi', '1500M', '4Gi', '768Mi'];
const budgetMs = 1000;
const budgetModels = 100_000;

const sizes = [
  { models: 1_000, warmup: 10, runs: 30 },
  { models: 10_000, warmup: 5, runs: 30 },
  { models: 100_000, warmup: 2, runs: 10 },
];

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

/** The decode-diff suite. */
export const decodeDiffSuite: Suite = {
  name: 'decode-diff',
  description:
    'Time to turn models.json into ops: JSON.parse alone, decodeConfig (parse + io-ts + snapshot), ' +
    'decodeConfig + diff against the previous snapshot (1% changed, 0.5% removed, 0.5% added), and diff alone.',
  run: () => {
    const rows: Row[] = [];
    const notes: string[] = [];
    let check: Check | undefined;
    for (const { models, warmup, runs } of sizes) {
      const pair = configPair(models);
      const previous = snapshotOfText(pair.previousText);
      const next = snapshotOfText(pair.nextText);
      const ops = decodeAndDiff(previous, pair.nextText);
      const removes = ops.filter((op) => op._tag === 'Remove').length;
      if (removes !== pair.expectedRemoves || ops.length - removes !== pair.expectedAdds) {
        throw new Error(
          `diff found ${removes} removes and ${ops.length - removes} adds for ${models} models`,
        );
      }
      notes.push(
        `${models} models: models.json is ${(pair.nextText.length / 1e6).toFixed(2)} MB; ` +
          `the update yields ${removes} Remove and ${ops.length - removes} Add ops.`,
      );
      const steps: Array<[string, () => unknown]> = [
        ['JSON.parse', () => JSON.parse(pair.nextText) as unknown],
        ['decodeConfig', () => decodeConfig(file, pair.nextText)],
        ['decodeConfig + diff', () => decodeAndDiff(previous, pair.nextText)],
        ['diff alone', () => diff(previous, next)],
      ];
      const timings = timeRuns(
        steps.map(([, fn]) => fn),
        warmup,
        runs,
      );
      const parseMedian = summarize(timings[0]!).median;
      steps.forEach(([step], i) => {
        const summary = summarize(timings[i]!);
        rows.push({
          models,
          step,
          runs: summary.runs,
          medianMs: summary.median,
          p90Ms: summary.p90,
          minMs: summary.min,
          maxMs: summary.max,
          xJsonParse: round3(summary.median / parseMedian),
        });
        if (models === budgetModels && step === 'decodeConfig + diff') {
          check = {
            name: `${models} models: decodeConfig + diff, median under ${budgetMs} ms`,
            budgetMs,
            medianMs: summary.median,
            p90Ms: summary.p90,
            withinBudget: summary.median < budgetMs,
            p90WithinBudget: summary.p90 < budgetMs,
          };
        }
      });
    }
    notes.push(
      'Times are wall-clock ms per call, after untimed warm-up rounds, garbage collection included; the ' +
        'steps run round-robin so drift hits all alike. ' +
        'xJsonParse = median / median of JSON.parse of the same text.',
    );
    return Promise.resolve({ rows, checks: check === undefined ? [] : [check], notes });
  },
};
