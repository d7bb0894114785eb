/** The agent's Prometheus metrics (prom-client): a registry of `modelsync_*` series, the Telemetry that counts into it, and what status changes count. */
import { isRight } from 'fp-ts/Either';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { promClient } from './prom-client-parts';
import type { ModelName } from '../core/model-name';
import type { ModelSpec } from '../core/model-config';
import type { ModelPhase, ModelStatus } from '../core/model-status';
import { redact } from '../core/redact';
import { specEquals } from '../core/snapshot';
import { shownPhases } from '../core/status-document';
import { parseStorageUri } from '../core/storage-uri';
import type { Telemetry } from '../ports';
import { uncaughtErrorCount } from '../log';

/** What the metrics read when scraped (the loader's statuses and slots, readiness). */
export interface MetricsView {
  readonly statuses: () => Iterable<ModelStatus>;
  readonly inFlight: () => { readonly downloads: number; readonly loads: number };
  readonly ready: () => boolean;
  /** With `--source kube-api`: the watch's restarts and re-lists so far. */
  readonly sourceWatch?: () => { readonly watchRestarts: number; readonly relists: number } | undefined;
}

/** The agent's metrics: the registry to serve, and what feeds it. */
export interface AgentMetrics {
  readonly registry: Registry;
  /** Counts config reads, retries, resyncs and repairs (watcher progress is the surface state's). */
  readonly telemetry: Telemetry;
  /** Counts what a status change says happened: a download, load or unload that ended, and how. */
  readonly observeStatus: (status: ModelStatus) => void;
  /** Counts an op the diff sent to the loader. */
  readonly observeOp: (op: 'Add' | 'Remove') => void;
}

// The scheme label takes only these values: a config may name any scheme, and labels must stay few.
// An Azure Blob URL is an https one: it is labelled `https`.
const schemeLabels = new Set(['file', 'http', 'https', 's3', 'gs', 'hdfs', 'webhdfs', 'pvc', 'hf']);
type Step = 'Downloading' | 'Loading' | 'Unloading';
/** The phases each step ends well in: another (a download ended in Removed) was a step a newer desired state cut short. */
const endsWell: Readonly<Record<Step, ReadonlySet<ModelPhase>>> = {
  Downloading: new Set(['Loading', 'Loaded']),
  Loading: new Set(['Loaded']),
  Unloading: new Set(['Removed']),
};
const endsBadly: ReadonlySet<ModelPhase> = new Set(['Retrying', 'Failed']);

/** Whether two statuses are about one desired state (a step's end, not the next state's work after it was cut short). */
const sameDesired = (a: ModelSpec | undefined, b: ModelSpec | undefined): boolean =>
  a === undefined || b === undefined ? a === b : specEquals(a, b);

/** The scheme of a storage URI as a label: a local path is `file`, an unknown or invalid scheme `other`. */
export const schemeLabel = (storageUri: string): string => {
  const parsed = parseStorageUri(storageUri);
  const scheme = isRight(parsed) ? parsed.right.scheme : 'other';
  return schemeLabels.has(scheme) ? scheme : 'other';
};

/** The first 12 hex digits of a sha256 as a number (exact in a float64): a config's checksum as a plain gauge. */
export const checksumValue = (checksum: string): number => Number.parseInt(checksum.slice(0, 12), 16) || 0;

/** Every modelsync series and its help text, in the order the registry lists them. */
const helps = {
  modelsync_models: 'Models by phase (Pending, Downloading, Loading, Loaded, Unloading, Retrying, Failed).',
  modelsync_ready: '1 once the start-up sync is done (what /readyz answers), else 0.',
  modelsync_downloads_in_flight: 'Downloads running now (holding a download slot).',
  modelsync_download_progress_bytes:
    'Bytes a running download has moved so far, by model, as of its last progress report (--progress-interval-ms).',
  modelsync_download_size_bytes:
    'Bytes a running download moves in all, by model, when its storage said so up front.',
  modelsync_loads_in_flight: 'Load and unload calls running now (holding a load slot).',
  modelsync_model_ops_total: 'Ops the config diff sent to the loader, by op (add, remove).',
  modelsync_downloads_total:
    'Downloads that ended, by result (success, failure) and, on failure, error_kind.',
  modelsync_loads_total: 'Load calls that ended, by result (success, failure) and, on failure, error_kind.',
  modelsync_unloads_total:
    'Unload calls that ended, by result (success, failure) and, on failure, error_kind.',
  modelsync_download_bytes:
    'Bytes of each finished download, by storage scheme (for the schemes whose providers count them).',
  modelsync_download_duration_seconds:
    'Time of each finished download, by storage scheme (waiting for a download slot included).',
  modelsync_load_duration_seconds: 'Time of each successful load (waiting for a load slot included).',
  modelsync_unload_duration_seconds:
    'Time of each successful unload and delete (waiting for a load slot included).',
  modelsync_retries_total: 'Transient failures retried after a backoff, by step (download, load, unload).',
  modelsync_config_reads_total:
    'Reads of models.json by outcome: accepted, rejected (the last good config stays), unchanged.',
  modelsync_config_last_accepted_timestamp_seconds: 'When a models.json read was last accepted (Unix time).',
  modelsync_config_checksum:
    'The first 48 bits of the sha256 of the config in force, as a number (compare pods, spot changes).',
  modelsync_config_info:
    'Always 1; the checksum label is the first 12 hex digits of the sha256 of the config in force.',
  modelsync_resync_runs_total: 'Resync runs by trigger (timer, signal).',
  modelsync_repairs_total:
    'Drift repairs by kind (reload-lost, unload-unlisted, retry-failed, retry-unload).',
  modelsync_repairs_deferred_total:
    'Unloads of unlisted models a start or a resync left to a later resync (--max-unlisted-unloads).',
  modelsync_uncaught_errors_total:
    'Errors nothing handled (a library failing in its own callback), caught by the last-resort guard.',
  modelsync_config_watch_restarts_total:
    'With --source kube-api: watch requests after the first (a clean end, an error or a stall).',
  modelsync_config_relists_total:
    'With --source kube-api: lists after the first (after a failure a resume would repeat, such as 410 Gone, or a stall).',
  modelsync_node_cache_hits_total:
    'With --node-cache-dir: models filled from the node cache instead of downloaded.',
  modelsync_node_cache_misses_total:
    'With --node-cache-dir: models this pod downloaded and put into the node cache (no usable entry yet).',
  modelsync_node_cache_saved_bytes_total:
    'With --node-cache-dir: bytes of the models filled from the node cache, which the store did not send.',
  modelsync_node_cache_evictions_total:
    'With --node-cache-dir: node cache entries this pod evicted to keep its size budget and free-space floor.',
} as const;
type Series = keyof typeof helps;

/**
 * How often the `nodejs_eventloop_lag_*` histogram samples the event loop (prom-client's default: 10 ms). Its timer
 * wakes the process each time: at 10 ms that alone cost an idle agent 165 ms of CPU a minute, at 1 s about 9.
 * The min, max and percentiles then come from a sample a second (15 to 60 between two scrapes) and a stall shorter
 * than a second shows only when it holds up a sample; a stall that trips `/healthz` lasts seconds.
 */
const eventLoopSampleMs = 1000;

/** The `nodejs_eventloop_lag_*` series of Node's histogram that hold a sample's whole interval (all but stddev). */
const lagPerSample = ['min', 'max', 'mean', 'p50', 'p90', 'p99'].map(
  (what) => `nodejs_eventloop_lag_${what}_seconds`,
);

/**
 * Node's event loop histogram records each sample's whole interval, the sampling period and the lag past it: at a
 * sample a second an idle agent showed a lag of 1 s (min 0.9998, p99 1.016). Each of those series shows the lag
 * past the period, as prom-client's 10 ms sampling nearly did (a lag of 10 ms when idle).
 */
const showingLagPastTheSample = (registry: Registry): void => {
  for (const name of lagPerSample) {
    const gauge = registry.getSingleMetric(name) as Gauge | undefined;
    if (gauge === undefined) continue;
    const read = gauge.get.bind(gauge);
    gauge.get = async () => {
      const got = await read();
      const values = got.values.map((value) => ({
        ...value,
        value: Math.max(0, value.value - eventLoopSampleMs / 1000),
      }));
      return { ...got, values };
    };
  }
};

/** A fresh registry with every modelsync series and Node's default process metrics. */
export const createMetrics = (view: MetricsView): AgentMetrics => {
  const { collectDefaultMetrics, Counter, exponentialBuckets, Gauge, Histogram, Registry } = promClient();
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: eventLoopSampleMs });
  showingLagPastTheSample(registry);
  const registers = [registry];
  const counter = (name: Series, ...labelNames: string[]): Counter =>
    new Counter({ name, help: helps[name], labelNames, registers });
  const gauge = (name: Series, ...labelNames: string[]): Gauge =>
    new Gauge({ name, help: helps[name], labelNames, registers });
  const secondsBuckets = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
  const histogram = (name: Series, buckets: number[], ...labelNames: string[]): Histogram =>
    new Histogram({ name, help: helps[name], labelNames, buckets, registers });
  /** A gauge `collect` fills at each scrape (from `view`). */
  const scraped = (name: Series, labelNames: string[], collect: (this: Gauge) => void): void =>
    void new Gauge({ name, help: helps[name], labelNames, registers, collect });
  const viewGauge = (name: Series, value: () => number): void =>
    scraped(name, [], function () {
      this.set(value());
    });
  // The one place a model name is a label: only downloads running now have a series (at most
  // --download-concurrency), reset at each scrape, so a finished download's series is gone at the next. The label is
  // the name as the redaction shows it, and names it shows alike share one series (their sum): two series the same
  // after the surface's redaction would make Prometheus refuse the whole scrape.
  const runningDownloadGauge = (name: Series, value: (status: ModelStatus) => number | undefined): void =>
    scraped(name, ['model'], function () {
      this.reset();
      for (const status of view.statuses()) {
        const figure = status.phase === 'Downloading' ? value(status) : undefined;
        if (figure !== undefined) this.inc({ model: redact(status.modelName) }, figure);
      }
    });
  // Counters set at each scrape to a count kept elsewhere (they only grow): undefined leaves them as they are.
  const scrapedCounter = (name: Series, count: () => number | undefined): void =>
    void new Counter({
      name,
      help: helps[name],
      registers,
      collect() {
        const value = count();
        if (value === undefined) return;
        this.reset();
        this.inc(value);
      },
    });

  scraped('modelsync_models', ['phase'], function () {
    const counts = new Map<ModelPhase, number>(shownPhases.map((phase) => [phase, 0]));
    for (const { phase } of view.statuses()) if (counts.has(phase)) counts.set(phase, counts.get(phase)! + 1);
    for (const [phase, count] of counts) this.set({ phase }, count);
  });
  viewGauge('modelsync_ready', () => (view.ready() ? 1 : 0));
  viewGauge('modelsync_downloads_in_flight', () => view.inFlight().downloads);
  runningDownloadGauge('modelsync_download_progress_bytes', (status) => status.bytesDownloaded);
  runningDownloadGauge('modelsync_download_size_bytes', (status) =>
    status.bytesDownloaded === undefined ? undefined : status.bytesTotal,
  );
  viewGauge('modelsync_loads_in_flight', () => view.inFlight().loads);
  const ops = counter('modelsync_model_ops_total', 'op');
  const stepCounters = {
    Downloading: counter('modelsync_downloads_total', 'result', 'error_kind'),
    Loading: counter('modelsync_loads_total', 'result', 'error_kind'),
    Unloading: counter('modelsync_unloads_total', 'result', 'error_kind'),
  };
  // Buckets from 1 KiB to 1 TiB.
  const downloadBytes = histogram('modelsync_download_bytes', exponentialBuckets(1024, 4, 16), 'scheme');
  const stepSeconds = {
    Downloading: histogram('modelsync_download_duration_seconds', secondsBuckets, 'scheme'),
    Loading: histogram('modelsync_load_duration_seconds', secondsBuckets),
    Unloading: histogram('modelsync_unload_duration_seconds', secondsBuckets),
  };
  const retries = counter('modelsync_retries_total', 'step');
  const configReads = counter('modelsync_config_reads_total', 'outcome');
  const lastAccepted = gauge('modelsync_config_last_accepted_timestamp_seconds');
  const checksumGauge = gauge('modelsync_config_checksum');
  const configInfo = gauge('modelsync_config_info', 'checksum');
  const resyncs = counter('modelsync_resync_runs_total', 'trigger');
  const repairs = counter('modelsync_repairs_total', 'kind');
  const repairsDeferred = counter('modelsync_repairs_deferred_total');
  scrapedCounter('modelsync_uncaught_errors_total', uncaughtErrorCount);
  // The kube-api watch keeps its own counts.
  scrapedCounter('modelsync_config_watch_restarts_total', () => view.sourceWatch?.()?.watchRestarts);
  scrapedCounter('modelsync_config_relists_total', () => view.sourceWatch?.()?.relists);
  for (const outcome of ['accepted', 'rejected', 'unchanged']) configReads.inc({ outcome }, 0);
  const nodeCache = {
    hits: counter('modelsync_node_cache_hits_total'),
    misses: counter('modelsync_node_cache_misses_total'),
    savedBytes: counter('modelsync_node_cache_saved_bytes_total'),
    evictions: counter('modelsync_node_cache_evictions_total'),
  };

  const lastStatus = new Map<ModelName, Pick<ModelStatus, 'phase' | 'spec'>>();
  const observeStatus = (status: ModelStatus): void => {
    const last = lastStatus.get(status.modelName);
    if (status.phase === 'Removed') lastStatus.delete(status.modelName);
    else lastStatus.set(status.modelName, { phase: status.phase, spec: status.spec });
    const previous = last?.phase;
    if (previous !== 'Downloading' && previous !== 'Loading' && previous !== 'Unloading') return;
    // A newer desired state gave the step up (a download aborted, a call never sent): it ended neither way.
    if (!sameDesired(last?.spec, status.spec)) return;
    if (endsWell[previous].has(status.phase)) {
      stepCounters[previous].inc({ result: 'success' });
      const seconds = (status.durationMs ?? 0) / 1000;
      if (previous !== 'Downloading') return stepSeconds[previous].observe(seconds);
      const scheme = schemeLabel(status.spec?.storageUri ?? '');
      stepSeconds.Downloading.observe({ scheme }, seconds);
      if (status.bytesDownloaded !== undefined) downloadBytes.observe({ scheme }, status.bytesDownloaded);
    } else if (endsBadly.has(status.phase)) {
      stepCounters[previous].inc({ result: 'failure', error_kind: status.errorKind ?? 'unknown' });
    }
  };

  const telemetry: Telemetry = {
    configRead: (outcome, detail) => {
      configReads.inc({ outcome });
      if (outcome !== 'accepted') return;
      lastAccepted.setToCurrentTime();
      if (detail?.checksum === undefined) return;
      checksumGauge.set(checksumValue(detail.checksum));
      configInfo.reset();
      configInfo.set({ checksum: detail.checksum.slice(0, 12) }, 1);
    },
    resyncRun: (trigger) => resyncs.inc({ trigger }),
    repair: (kind) => repairs.inc({ kind }),
    repairsDeferred: (count) => repairsDeferred.inc(count),
    retry: (step) => retries.inc({ step }),
    watcherAlive: () => undefined,
    nodeCache: (event) => {
      if (event._tag === 'Miss') return nodeCache.misses.inc();
      if (event._tag === 'Evicted') return nodeCache.evictions.inc(event.entries);
      nodeCache.hits.inc();
      nodeCache.savedBytes.inc(event.bytes);
    },
  };

  return { registry, telemetry, observeStatus, observeOp: (op) => ops.inc({ op: op.toLowerCase() }) };
};
