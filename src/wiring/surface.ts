/** Production wiring of the HTTP surface: its state, metrics and server, and what the agent must run with to feed them. */
import type { Logger } from 'pino';
import type { AddressInfo } from 'node:net';
import { merge, tap, type MonoTypeOperatorFunction, type Observable } from 'rxjs';
import type { AppConfig } from '../core/flags/app-config';
import type { ModelName } from '../core/model-name';
import type { AgentEvent, ModelStatus } from '../core/model-status';
import { redact } from '../core/redact';
import { modelStatusJson, statusDocumentText } from '../core/status-document';
import { httpSurface } from '../surface/http-surface';
import { createMetrics } from '../surface/metrics';
import { createSurfaceState } from '../surface/surface-state';
import type { Loader } from '../loader/loader';
import type { KubeWatchStatus } from '../config-source/kube-api-source';
import type { Telemetry } from '../ports';
import type { AgentSettings } from '../agent/start-agent';

/** The surface of one agent: what the agent runs with to feed it, and the server. */
export interface Surface {
  /** What the agent reports into: the metrics and the surface's state (the config source's `onAlive` too). */
  readonly telemetry: Telemetry;
  /** The settings that feed the surface: `telemetry`, `onStart` (the loader it reads), `opOperators` (ops counted). */
  readonly settings: Required<Pick<AgentSettings, 'telemetry' | 'onStart' | 'opOperators'>>;
  /** Taps the agent's events: each status into the metrics, `Ready` into readiness. */
  readonly observe: MonoTypeOperatorFunction<AgentEvent>;
  /** Hands the surface the kube-api watch's state (for /status and metrics); the dir source has none. */
  readonly useSourceStatus: (status: () => KubeWatchStatus) => void;
  /** Listens on `--http-port` while subscribed (and ticks the event-loop heartbeat); emits the address. */
  readonly serve$: Observable<AddressInfo>;
}

/** The kube-api watch as /status shows it: times as ISO 8601, the failure redacted. */
const watchJson = (watch: KubeWatchStatus): Readonly<Record<string, string | number>> => {
  const { lastAliveAt, lastFailure, source: _source, ...rest } = watch;
  return Object.fromEntries(
    Object.entries({
      ...rest,
      ...(lastAliveAt !== undefined ? { lastAliveAt: new Date(lastAliveAt).toISOString() } : {}),
      ...(lastFailure !== undefined ? { lastFailure: redact(lastFailure) } : {}),
    }).filter((entry): entry is [string, string | number] => entry[1] !== undefined),
  );
};

const both = (first: Telemetry, second: Pick<Telemetry, 'configRead' | 'watcherAlive'>): Telemetry => ({
  ...first,
  configRead: (outcome, detail) => {
    first.configRead(outcome, detail);
    second.configRead(outcome, detail);
  },
  watcherAlive: () => second.watcherAlive(),
});

/** The surface `config` asks for (`--http-port`, `--watch-stall-ms`), logging to `log`. */
export const surfaceFor = (config: AppConfig, log: Logger): Surface => {
  const state = createSurfaceState({
    stallMs: config.watchStallMs,
    source: config.source === 'kube-api' ? 'kube-api' : 'config-dir',
  });
  let loader: Loader | undefined;
  let sourceStatus: (() => KubeWatchStatus) | undefined;
  const statuses = (): ReadonlyMap<ModelName, ModelStatus> => loader?.statuses() ?? new Map();
  const metrics = createMetrics({
    statuses: () => statuses().values(),
    inFlight: () => ({
      downloads: loader?.slots.download.inUse() ?? 0,
      loads: loader?.slots.load.inUse() ?? 0,
    }),
    ready: state.ready,
    sourceWatch: () => sourceStatus?.(),
  });
  const telemetry = both(metrics.telemetry, state.telemetry);
  // Statuses are replaced, never changed: a model's text is made once per status, not at every request.
  const texts = new WeakMap<ModelStatus, string>();
  const modelText = (status: ModelStatus): string => {
    const known = texts.get(status);
    if (known !== undefined) return known;
    const text = redact(JSON.stringify(modelStatusJson(status)));
    texts.set(status, text);
    return text;
  };
  const server$ = httpSurface({
    port: config.httpPort,
    log: log.child({ component: 'http' }),
    view: {
      liveness: state.liveness,
      ready: state.ready,
      statusDocument: () =>
        statusDocumentText(
          statuses().values(),
          sourceStatus === undefined
            ? state.config()
            : { ...state.config(), watch: watchJson(sourceStatus()) },
          state.ready(),
          modelText,
        ),
      modelStatus: (model) => {
        const status = statuses().get(model as ModelName);
        return status === undefined || status.phase === 'Removed' ? undefined : modelStatusJson(status);
      },
      metrics: async () => ({
        contentType: metrics.registry.contentType,
        text: await metrics.registry.metrics(),
      }),
    },
  });
  return {
    telemetry,
    settings: {
      telemetry,
      onStart: (start) => void (loader = start.loader),
      opOperators: [tap((op) => metrics.observeOp(op._tag))],
    },
    observe: tap((event) => {
      if (event._tag === 'Ready') state.markReady();
      else metrics.observeStatus(event.status);
    }),
    useSourceStatus: (status) => void (sourceStatus = status),
    serve$: merge(server$, state.heartbeat$),
  };
};
