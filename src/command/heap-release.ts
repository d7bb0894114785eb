/**
 * After a burst of work, the heap it grew given back: V8 keeps the pages a burst committed (1,000 models: heapTotal
 * 20 -> 43 MiB around a ~18 MiB live heap) until its memory reducer's watchdog runs a shrinking collection, 100 s
 * after the last collection; an idle agent allocates too little to bring that about sooner.
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import {
  asyncScheduler,
  connect,
  EMPTY,
  endWith,
  ignoreElements,
  merge,
  ReplaySubject,
  switchMap,
  takeUntil,
  tap,
  timer,
  type SchedulerLike,
} from 'rxjs';
import type { Logger } from 'pino';
import type { AgentRun } from '../wiring';
import type { Loader } from '../loader';

/** What a release reads and does: the committed heap, and a collection that gives back what it can. */
export interface HeapRelease {
  /** V8's committed heap (heapTotal), bytes. */
  readonly committedBytes: () => number;
  /** A collection that compacts and returns the pages it empties; undefined where none can be asked for. */
  readonly collect: (() => void) | undefined;
}

/**
 * `gc` is there when Node.js runs with `--expose-gc` (`agentNodeFlags`). Its `last-resort` flavour is the collection
 * V8 runs before it gives up on memory: it compacts and returns the pages it empties, where a plain `gc()` leaves
 * heapTotal where it was (1,000 models: 43 -> 42 MiB; last-resort: 43 -> 20 MiB, RSS 133 -> 109 MiB, 40 ms once).
 */
export const v8HeapRelease: HeapRelease = {
  committedBytes: () => getHeapStatistics().total_heap_size,
  collect:
    globalThis.gc === undefined
      ? undefined
      : () => void globalThis.gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' }),
};

/** When and how much: the quiet after the loader goes idle, and the growth of the heap worth a collection. */
export interface HeapReleaseSettings {
  /** Idle this long (a burst that comes as several config changes is one burst); 1 s by default. */
  readonly quietMs?: number;
  /** heapTotal grown by at least this since the last release (or the start); 8 MiB by default. */
  readonly minGrowthBytes?: number;
  readonly scheduler?: SchedulerLike;
}

const MiB = 2 ** 20;

/**
 * `run` that, each time its loader has been idle `quietMs` after work that grew heapTotal by `minGrowthBytes` or
 * more, asks `release` for a collection (one debug line says what it gave back). Nothing is scheduled while idle,
 * and a loader that stays idle (resyncs that change nothing) never collects.
 */
export const releasingHeap =
  (release: HeapRelease, log: Logger, settings: HeapReleaseSettings = {}) =>
  (run: AgentRun): AgentRun =>
  (capabilities, agentSettings) => {
    const { collect } = release;
    if (collect === undefined) return run(capabilities, agentSettings);
    const { quietMs = 1000, minGrowthBytes = 8 * MiB, scheduler = asyncScheduler } = settings;
    let sinceBytes = release.committedBytes();
    const collectIfGrown = (): void => {
      const before = release.committedBytes();
      if (before - sinceBytes < minGrowthBytes) return;
      const started = performance.now();
      collect();
      sinceBytes = release.committedBytes();
      const durationMs = Math.round(performance.now() - started);
      log.debug(
        { heapTotalMiB: Math.round(before / MiB), releasedToMiB: Math.round(sinceBytes / MiB), durationMs },
        'heap released after a burst',
      );
    };
    const loader$ = new ReplaySubject<Loader>(1);
    const events$ = run(capabilities, {
      ...agentSettings,
      onStart: (start) => {
        loader$.next(start.loader);
        agentSettings.onStart?.(start);
      },
    });
    return events$.pipe(
      connect((shared$) => {
        const releases$ = loader$.pipe(
          switchMap((loader) => loader.idle$),
          switchMap((idle) => (idle ? timer(quietMs, scheduler) : EMPTY)),
          tap(collectIfGrown),
          ignoreElements(),
          takeUntil(shared$.pipe(ignoreElements(), endWith(true))),
        );
        return merge(shared$, releases$);
      }),
    );
  };
