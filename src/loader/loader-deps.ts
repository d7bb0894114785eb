/** What a loader runs on: its ports, its limits and how it retries. */
import type { Logger } from 'pino';
import type { SchedulerLike } from 'rxjs';
import type { DownloadFunction, LoadJournal, ModelServer, ModelStore, Telemetry } from '../ports';
import type { RetryPolicy } from '../core/retry-policy';
import type { ContentRegistry } from './content-registry';

/** The loader's ports and limits. */
export interface LoaderDeps {
  readonly store: ModelStore;
  readonly journal: LoadJournal;
  readonly server: ModelServer;
  /** Fills a directory with the model stored at a URI (storage providers, keyed by scheme). */
  readonly download: DownloadFunction;
  readonly log: Logger;
  readonly downloadConcurrency: number;
  readonly loadConcurrency: number;
  /** How a step's transient failure is retried: `maxAttempts` of one step before the model is marked Failed. */
  readonly retry: RetryPolicy;
  /** The jitter source of retry delays; Math.random by default. */
  readonly random?: () => number;
  /** Where retry delays are timed; asyncScheduler by default. */
  readonly scheduler?: SchedulerLike;
  /** Hears of every retry; noTelemetry by default. */
  readonly telemetry?: Telemetry;
  /** Which installed models hold which stored content, to fill downloads from; a bounded one by default. */
  readonly contentRegistry?: ContentRegistry;
}
