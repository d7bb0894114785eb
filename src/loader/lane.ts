/** Lane: a work queue with its own workers; the loader runs two, the main lane and the side lane of unlisted unloads. */
import type { SchedulerLike } from 'rxjs';
import type { ModelName } from '../core/model-name';
import type { ModelRecord } from './model-record';
import { createWorkQueue, type WorkQueue, type WorkQueueCounts } from './work-queue';

/** What a lane works on, with how many workers, and what it does with a name that is not its own. */
export interface LaneOptions {
  readonly records: ReadonlyMap<ModelName, ModelRecord>;
  readonly workers: number;
  /** Whether the lane works on this model now. */
  readonly takes: (record: ModelRecord) => boolean;
  /** Where a queued name the lane does not take goes; absent: it is dropped (another lane has it already). */
  readonly handOver?: (name: ModelName) => void;
  /** Works once on a model; the lane runs it after any earlier work on that model has ended. */
  readonly work: (record: ModelRecord) => Promise<void>;
  /**
   * The work on `record` rejected: a defect, since work ends its own failures (a throwing port, say an
   * integrator's telemetry). Told so the log and the model's status say it; the worker is freed and later work on
   * the model runs all the same.
   */
  readonly threw: (record: ModelRecord, error: unknown) => void;
  /** A worker of the lane is free again. */
  readonly freed: () => void;
}

export interface Lane {
  readonly queue: WorkQueue<ModelName>;
  /** Starts work on queued names while a worker is free; a name whose record is gone (closed meanwhile) just ends. */
  readonly pump: () => void;
}

const ignore = (): void => undefined;

/** A lane with an empty queue, its retries timed on `scheduler`. */
export const createLane = (scheduler: SchedulerLike, options: LaneOptions): Lane => {
  const queue = createWorkQueue<ModelName>(scheduler);
  const start = (name: ModelName, record: ModelRecord | undefined): void => {
    // Work that rejects must not hold its worker (no `done`) nor, as the model's `inFlight`, skip its later work.
    const task = record
      ? record.inFlight
          .then(() => options.work(record))
          .catch((error: unknown) => options.threw(record, error))
      : Promise.resolve();
    if (record) record.inFlight = task.catch(ignore);
    // A `threw` that throws as well goes on to the process's last resort (one error line), the worker freed.
    void task.finally(() => {
      queue.done(name);
      options.freed();
    });
  };
  const pump = (): void => {
    let name: ModelName | undefined;
    while (queue.counts().processing < options.workers && (name = queue.get()) !== undefined) {
      const record = options.records.get(name);
      if (record === undefined || options.takes(record)) start(name, record);
      else {
        options.handOver?.(name);
        queue.done(name);
      }
    }
  };
  return { queue, pump };
};

export const laneCounts = (lanes: ReadonlyArray<Lane>): WorkQueueCounts =>
  lanes
    .map((lane) => lane.queue.counts())
    .reduce((sum, count) => ({
      queued: sum.queued + count.queued,
      processing: sum.processing + count.processing,
      delayed: sum.delayed + count.delayed,
    }));
