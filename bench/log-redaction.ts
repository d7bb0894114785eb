/** Suite log-redaction: the cost of the logger's redaction guard over the log lines of a 10k-model sync. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { ModelName } from '../src/core/model-name';
import type { ModelStatus } from '../src/core/model-status';
import { redactLogLine } from '../src/core/redact';
import { redactingDestination } from '../src/log/logger';
import { logStatus } from '../src/loader/status-log';
import { seededRandom } from '../src/testing/seeded-random';
import { round3, summarize, timeRuns, type Check, type Row, type RunOptions, type Suite } from './suite';

const models = 10_000;
const warmup = 3;
const fullRuns = 15;
const quickRuns = 5;
// The guard may cost at most this share of the time a 10k-model sync takes (adds-throughput's 10k row).
const budgetShare = 0.01;

/** A destination that drops what it is given, as a fast disk would take it: only pino and the guard are timed. */
const discard: pino.DestinationStream = { write: () => undefined };

/**
 * The statuses a 10k-model start-up sync logs at info: Downloading, Loading and Loaded for every model, a
 * Retrying with an HTTP reason for ~2 % (URLs in the reason), their storage URIs presigned S3 URLs.
 */
const syncStatuses = (): ModelStatus[] => {
  const random = seededRandom(20_260_101);
  const statuses: ModelStatus[] = [];
  for (let i = 0; i < models; i++) {
    const modelName = `model-${String(i).padStart(5, '0')}` as ModelName;
    const spec = {
      storageUri: `https://bucket.s3.amazonaws.com/models/${modelName}.tar.gz?X-Amz-Signature=${i.toString(16)}`,
    };
    statuses.push({ modelName, phase: 'Downloading', spec }, { modelName, phase: 'Loading', spec });
    if (random() < 0.02) {
      const reason = `model server load of "${modelName}" (http://127.0.0.1:8000) returned HTTP 503: busy`;
      statuses.push({ modelName, phase: 'Retrying', spec, reason, errorKind: 'http-status', attempt: 1 });
    }
    statuses.push({ modelName, phase: 'Loaded', spec });
  }
  return statuses;
};

/** The log lines of `statuses` as pino writes them, captured once (for the guard alone). */
const linesOf = (statuses: ReadonlyArray<ModelStatus>): string[] => {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  for (const status of statuses) logStatus(log, status);
  return lines;
};

/** adds-throughput's 10k-model sync time from its last results file, if there is one. */
const syncSeconds = (): number | undefined => {
  try {
    const file = path.resolve(__dirname, '..', '..', 'bench', 'results', 'adds-throughput.json');
    const result = JSON.parse(readFileSync(file, 'utf8')) as { rows: Array<Record<string, number>> };
    return result.rows.find((row) => row['adds'] === models)?.['seconds'];
  } catch {
    return undefined;
  }
};

/** The log-redaction suite. */
export const logRedactionSuite: Suite = {
  name: 'log-redaction',
  description:
    `The redaction guard of createLogger over the info log of a ${models}-model start-up sync (logStatus lines): ` +
    'pino writing them without the guard, with it, and the guard alone on the finished lines.',
  run: ({ quick }: RunOptions) => {
    const runs = quick ? quickRuns : fullRuns;
    const statuses = syncStatuses();
    const lines = linesOf(statuses);
    const plain = pino({ level: 'info' }, discard);
    const guarded = pino({ level: 'info' }, redactingDestination(discard));
    const [plainMs, guardedMs, guardMs] = timeRuns(
      [
        () => statuses.forEach((status) => logStatus(plain, status)),
        () => statuses.forEach((status) => logStatus(guarded, status)),
        () => lines.map(redactLogLine),
      ],
      warmup,
      runs,
    ) as [number[], number[], number[]];
    const parsed = lines.filter((line) => redactLogLine(line) !== line).length;
    const [plainSummary, guardedSummary, guardSummary] = [plainMs, guardedMs, guardMs].map(summarize);
    const overheadMs = guardedSummary!.median - plainSummary!.median;
    const sync = syncSeconds();
    const rows: Row[] = [
      { case: 'pino, no guard', lines: lines.length, ...plainSummary! },
      { case: 'pino + guard (createLogger)', lines: lines.length, ...guardedSummary! },
      { case: 'guard alone (redactLogLine)', lines: lines.length, ...guardSummary! },
    ];
    const checks: Check[] = [
      {
        name: `guard overhead on a ${models}-model sync log is under ${budgetShare * 100} % of that sync's time`,
        withinBudget: sync !== undefined && overheadMs / 1000 < sync * budgetShare,
        overheadMs: round3(overheadMs),
        microsecondsPerLine: round3((overheadMs * 1000) / lines.length),
        syncSeconds: sync ?? null,
        budgetMs: sync === undefined ? null : round3(sync * budgetShare * 1000),
      },
      {
        name: 'pino + guard vs pino alone (the floor), same lines',
        withinBudget: true,
        ratio: round3(guardedSummary!.median / plainSummary!.median),
        better: 'lower',
      },
    ];
    return Promise.resolve({
      rows,
      checks,
      notes: [
        `Figures in ms for all ${lines.length} lines of one sync (${models} models x Downloading, Loading, Loaded, ` +
          '~2 % Retrying), median of the runs. Each status line carries the storage URI already through redactUri, ' +
          'so the guard finds nothing to hide in most lines and returns them unparsed.',
        `Lines the guard rewrote (parsed, redacted, serialized again): ${parsed} of ${lines.length}.`,
        'syncSeconds: the 10k row of bench/results/adds-throughput.json (logs at error there, so it does not ' +
          'include logging); the check compares the guard overhead (pino + guard minus pino) with 1 % of it.',
      ],
    });
  },
};
