/**
 * What joins an agent run at one seam, wrapping its start: the HTTP surface (`withSurface`), and Kubernetes Events
 * (`withKubeEvents`): its statuses and the config reads it rejects, handed to the recorder
 * (surface/kube-event-recorder.ts), which writes them off the agent's path to the Pod config-source's
 * `kubeEventsTarget` finds.
 */
import type { Logger } from 'pino';
import {
  catchError,
  defer,
  EMPTY,
  finalize,
  ignoreElements,
  merge,
  tap,
  throwError,
  type Observable,
} from 'rxjs';
import type { Env } from '../core/env';
import type { AppConfig } from '../core/flags/app-config';
import { configRejectedEvent, kubeEventOf } from '../core/kube-event';
import type { ModelName } from '../core/model-name';
import type { AgentEvent, ModelStatus } from '../core/model-status';
import { redact } from '../core/redact';
import type { AgentSettings } from '../agent';
import {
  eventWriteFailure,
  kubeEventsTarget,
  kubeWatchProblem,
  type KubeWatchStatus,
} from '../config-source';
import { agentPort, agentPortLimits, type AgentPortSettings } from './agent-port-proxy';
import type { SurfacedCapabilities } from './capabilities';
import type { Loader } from '../loader';
import { noTelemetry, type Telemetry } from '../ports';
import {
  createMetrics,
  createSurfaceState,
  defaultSurfaceLimits,
  httpSurface,
  kubeEventRecorder,
  statusPages,
  type KubeEventsWriterOf,
  withDescriptors,
} from '../surface';

/** How an agent run starts: `startAgent`, or `startAgent` with something joined to it. */
export type AgentRun = (
  capabilities: SurfacedCapabilities,
  settings: AgentSettings,
) => Observable<AgentEvent>;

/** The port of the HTTP surface could not be bound: the run ends, and the process with exit code 1. */
export class SurfaceBindFailed extends Error {
  constructor(
    readonly port: number,
    cause: unknown,
  ) {
    super(`cannot serve the HTTP surface on port ${port}`, { cause });
    this.name = 'SurfaceBindFailed';
  }
}

const times = new Set<string>(['lastAliveAt', 'lastActivityAt', 'unreachableSince', 'unreadSince']);

/** The wall-clock time of a `performance.now()` reading (the watch keeps those: a clock that never steps). */
const wallTimeOf = (monotonicMs: number): number => Date.now() - (performance.now() - monotonicMs);

/**
 * The kube-api watch as /status shows it: times as ISO 8601 (`unreachableSince` from the first failure until the
 * next sign of a working watch: the API server is unreachable and the watch retries), the failure redacted.
 */
export const kubeWatchJson = (watch: KubeWatchStatus): Readonly<Record<string, string | number>> => {
  const { lastFailure, source: _source, ...rest } = watch;
  const shown = { ...rest, ...(lastFailure !== undefined ? { lastFailure: redact(lastFailure) } : {}) };
  return Object.fromEntries(
    Object.entries(shown)
      .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
      .map(([key, value]) => [
        key,
        times.has(key) ? new Date(wallTimeOf(value as number)).toISOString() : value,
      ]),
  );
};

/** `telemetry`, with `hear` told of each config read too. */
const hearingConfigReads = (telemetry: Telemetry, hear: Telemetry['configRead']): Telemetry => ({
  ...telemetry,
  configRead: (outcome, detail) => {
    telemetry.configRead(outcome, detail);
    hear(outcome, detail);
  },
});

/** What else the surface's port does: KServe's agent port, and the shutdown it hears of (its checks then fail). */
export interface SurfaceOptions {
  readonly agentPort?: AgentPortSettings;
  readonly stopping$?: Observable<unknown>;
  /** Filled with what a graceful stop must wait for besides the loader (the agent port's proxy going quiet). */
  readonly drains?: Array<() => Promise<void>>;
}

/**
 * `run` with the HTTP surface of `config` joined to it: served (the heartbeat ticking) while the run is subscribed,
 * it reads the loader and the source's status, hears the run's telemetry, ops, statuses and `Ready`. A port that
 * cannot be bound ends the run with `SurfaceBindFailed`.
 */
export const withSurface =
  (config: AppConfig, log: Logger, options: SurfaceOptions = {}) =>
  (run: AgentRun): AgentRun =>
  (capabilities, settings) => {
    const sourceStatus = capabilities.configSource.status;
    const kubeWatch = (): KubeWatchStatus | undefined => {
      const status = sourceStatus?.();
      return status?.source === 'kube-api' ? status : undefined;
    };
    const state = createSurfaceState({
      stallMs: config.watchStallMs,
      source: config.source === 'kube-api' ? 'kube-api' : 'config-dir',
      watchAliveAt: sourceStatus && (() => sourceStatus().lastAliveAt),
      // The API server's silence (a quiet watch, an outage) is not the process's stall: only a stuck watch is.
      watchStuck:
        config.source === 'kube-api'
          ? () => {
              const watch = kubeWatch();
              return watch && kubeWatchProblem(watch, performance.now(), config.watchStallMs);
            }
          : undefined,
    });
    let loader: Loader | undefined;
    const statuses = (): ReadonlyMap<ModelName, ModelStatus> => loader?.statuses() ?? new Map();
    const metrics = createMetrics({
      statuses: () => statuses().values(),
      inFlight: () => ({
        downloads: loader?.slots.download.inUse() ?? 0,
        loads: loader?.slots.load.inUse() ?? 0,
      }),
      ready: state.ready,
      sourceWatch: kubeWatch,
    });
    const telemetry = {
      ...hearingConfigReads(metrics.telemetry, state.telemetry.configRead),
      watcherAlive: state.telemetry.watcherAlive,
    };
    const pages = statusPages({
      statuses: () => statuses().values(),
      status: (name) => loader?.status(name as ModelName),
      config: () => {
        const watch = kubeWatch();
        return watch === undefined ? state.config() : { ...state.config(), watch: kubeWatchJson(watch) };
      },
      ready: state.ready,
    });
    let draining = false;
    const view = {
      liveness: withDescriptors(state.liveness),
      ready: state.ready,
      statusPage: pages.page,
      modelStatus: pages.model,
      metrics: async () => ({
        contentType: metrics.registry.contentType,
        text: await metrics.registry.metrics(),
      }),
    };
    const server$ = defer(() => {
      const settings = options.agentPort;
      const port =
        settings === undefined
          ? undefined
          : agentPort(
              settings,
              { ready: state.ready, draining: () => draining },
              log.child({ component: 'proxy' }),
            );
      if (port !== undefined) options.drains?.push(port.quiet);
      // `--http-max-connections`, the rest the defaults.
      const limits = { ...defaultSurfaceLimits, maxConnections: config.httpMaxConnections };
      return httpSurface({
        port: config.httpPort,
        host: config.httpHost,
        limits: settings === undefined ? limits : agentPortLimits(limits, settings),
        log: log.child({ component: 'http' }),
        view,
        agentPort: port?.listener,
      }).pipe(finalize(() => port?.close()));
    });
    const stopping$ = (options.stopping$ ?? EMPTY).pipe(tap(() => (draining = true)));
    const serving$ = merge(server$, state.heartbeat$, stopping$).pipe(
      ignoreElements(),
      catchError((error: unknown) => {
        // Either setting may be the cause (a port taken, an address the host does not have), each as it was given.
        log.error(
          { err: error, port: config.httpPort, host: config.httpHost ?? 'every interface' },
          'cannot serve the HTTP surface; check --http-port (KServe: --port) and --http-host',
        );
        return throwError(() => new SurfaceBindFailed(config.httpPort, error));
      }),
    );
    const events$ = run(capabilities, {
      ...settings,
      telemetry,
      opOperators: [...(settings.opOperators ?? []), tap((op) => metrics.observeOp(op._tag))],
      onStart: (start) => {
        loader = start.loader;
        pages.changed(); // read from this loader from now on
        settings.onStart?.(start);
      },
    }).pipe(
      tap((event) => {
        if (event._tag === 'Ready') return state.markReady();
        metrics.observeStatus(event.status);
        pages.changed(event.status);
      }),
    );
    return merge(serving$, events$);
  };

/**
 * `run` with its events written as Kubernetes Events on its Pod; with `--kube-events off`, the run as it was. The
 * writes are off the run's path, so the run ends before its last events are written: `flushes` is filled with what
 * a graceful stop waits for (within its deadline) once the run has ended.
 */
export const withKubeEvents =
  (config: Pick<AppConfig, 'kubeEvents'>, log: Logger, env: Env, flushes: Array<() => Promise<void>>) =>
  (run: AgentRun): AgentRun =>
  (capabilities, settings) => {
    if (config.kubeEvents === 'off') return run(capabilities, settings);
    const writerOf: KubeEventsWriterOf = async () => {
      const target = await kubeEventsTarget(env);
      if (target._tag === 'Ready') return target.api;
      return { unavailable: target.why, quiet: target.outsidePod === true };
    };
    const recorder = kubeEventRecorder(writerOf, log.child({ component: 'events' }), {
      failure: eventWriteFailure,
    });
    flushes.push(() => recorder.flushed());
    return run(capabilities, {
      ...settings,
      telemetry: hearingConfigReads(settings.telemetry ?? noTelemetry, (outcome, detail) => {
        if (outcome === 'rejected' && recorder.active())
          recorder.record(configRejectedEvent(detail?.reason ?? 'no reason given'));
      }),
    }).pipe(
      tap((event) => {
        // Once nothing is written (outside a pod, or refused), an event is not even made: a burst pays nothing.
        if (!recorder.active()) return;
        const note = kubeEventOf(event);
        if (note !== undefined) recorder.record(note);
      }),
    );
  };
