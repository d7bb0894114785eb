/** Runs the real config pipeline (chokidar, real files) on a temp dir and records what it emits and logs. */
import { join } from 'node:path';
import pino from 'pino';
import { defer, tap, type Subscription } from 'rxjs';
import { modelOps } from '../../src/agent/sync-models';
import { applyOps } from '../../src/core/diff';
import type { ModelOp } from '../../src/core/model-op';
import { emptySnapshot, type Snapshot } from '../../src/core/snapshot';
import { configDirSource } from '../../src/config-source/config-dir';
import { sleep, waitFor } from '../../src/testing/wait';
import { LogSink } from './log-sink';
import { removeTempDir, tempDir } from './temp-dir';

/** The running pipeline and what it emitted and logged so far. */
export interface Harness {
  readonly configDir: string;
  readonly ops: ModelOp[];
  readonly sink: LogSink;
  /** How many times models.json was read. */
  readonly reads: () => number;
  /** What was in place with every op so far applied. */
  readonly state: () => Snapshot;
  readonly waitForOps: (count: number, timeoutMs?: number) => Promise<void>;
  readonly stop: () => Promise<void>;
}

/** Starts the pipeline on `configDir` (created by the caller or not: a missing dir is a case under test). */
export const startPipeline = async (
  options: { configDir?: string; inPlace?: Snapshot; settleMs?: number; recheckMs?: number } = {},
): Promise<Harness> => {
  const root = await tempDir('cfg');
  const configDir = options.configDir ?? join(root, 'configs');
  const sink = new LogSink();
  const log = pino({ level: 'debug' }, sink);
  const source = configDirSource({ dir: configDir, log, recheckMs: options.recheckMs ?? 50 });
  let reads = 0;
  const counted = { ...source, read: () => defer(() => source.read()).pipe(tap(() => reads++)) };
  const ops: ModelOp[] = [];
  const inPlace = options.inPlace ?? emptySnapshot;
  const subscription: Subscription = modelOps({
    configSource: counted,
    inPlace,
    log,
    settleMs: options.settleMs ?? 100,
  }).subscribe((op) => ops.push(op));
  return {
    configDir,
    ops,
    sink,
    reads: () => reads,
    state: () => applyOps(inPlace, ops),
    waitForOps: (count, timeoutMs) =>
      waitFor(
        () => ops.length >= count,
        timeoutMs,
        () => `${count} ops (have ${ops.length})`,
      ),
    stop: async () => {
      subscription.unsubscribe();
      await sleep(20); // chokidar's close is asynchronous
      await removeTempDir(root);
    },
  };
};
