/** SurfaceState: what /healthz, /readyz and /status know beyond the loader: liveness, readiness, the config's reads. */
import { closeSync, openSync } from 'node:fs';
import { ignoreElements, interval, type Observable, startWith, tap } from 'rxjs';
import type { ConfigState } from '../core/status-document';
import type { Telemetry } from '../ports';

/** Whether the process works, and if not, why (what /healthz answers). */
export interface Liveness {
  readonly ok: boolean;
  readonly reason?: string;
}

/** The surface's own record of the agent, fed by Telemetry and the Ready event. */
export interface SurfaceState {
  /** Records config reads and the watch's progress (the other methods are the metrics'). */
  readonly telemetry: Pick<Telemetry, 'configRead' | 'watcherAlive'>;
  /** The start-up sync is done: /readyz answers 200 from now on, whatever happens later. */
  readonly markReady: () => void;
  readonly ready: () => boolean;
  readonly liveness: () => Liveness;
  readonly config: () => ConfigState;
  /** Ticks the event-loop heartbeat while subscribed (the surface subscribes it while it serves). */
  readonly heartbeat$: Observable<never>;
}

/** How a SurfaceState judges liveness. */
export interface SurfaceStateOptions {
  /** No watch progress, or no event-loop turn, for this long is a stall (`--watch-stall-ms`). */
  readonly stallMs: number;
  /** The config source in force, as /status names it. */
  readonly source: string;
  /**
   * When the config source last showed its watch works (its own status, on `performance.now()`'s clock); absent:
   * only `watcherAlive` tells.
   */
  readonly watchAliveAt?: () => number | undefined;
  /** Why the watch is stuck, for a source that judges itself (kube-api); replaces the progress check when given. */
  readonly watchStuck?: () => string | undefined;
  /**
   * The clock the liveness checks read; `performance.now` by default: it never steps, so a wall clock set forward by
   * NTP is no stalled loop or watch (the times /status shows are the wall clock's).
   */
  readonly now?: () => number;
  /** The wall clock (ms since the epoch) of the times /status shows; Date.now by default. */
  readonly wallNow?: () => number;
}

/**
 * The heartbeat's period: four beats within `stallMs`, so that a turn missing for `stallMs` is a real stall. No
 * more often: each beat wakes an idle process (a wake-up costs 0.1-0.2 ms of CPU; once a second, that alone was a
 * third of the 50 ms a minute an idle agent may spend).
 */
export const heartbeatMs = (stallMs: number): number => Math.max(10, Math.floor(stallMs / 4));

/** How often a missing config dir is looked for, and the pause before re-arming a failed watch: soon, and rare. */
export const recheckMs = (stallMs: number): number => Math.min(1000, heartbeatMs(stallMs));

/**
 * A SurfaceState. The watch is judged only once it started (the agent first waits for the model server, and a
 * native sidecar's server starts after our startup probe passes: a watch not yet started is no stall).
 */
export const createSurfaceState = ({
  stallMs,
  source,
  watchAliveAt = () => undefined,
  watchStuck,
  now = () => performance.now(),
  wallNow = () => Date.now(),
}: SurfaceStateOptions): SurfaceState => {
  let ready = false;
  let pushed: number | undefined;
  let lastTurn: number | undefined;
  let config: ConfigState = { source };
  const heartbeat$ = interval(heartbeatMs(stallMs)).pipe(
    startWith(0),
    tap(() => (lastTurn = now())),
    ignoreElements(),
  );
  return {
    telemetry: {
      configRead: (outcome, detail) => {
        if (outcome === 'accepted') config = { ...config, lastAccepted: { at: wallNow(), ...detail } };
        if (outcome === 'rejected') config = { ...config, lastRejected: { at: wallNow(), ...detail } };
      },
      watcherAlive: () => void (pushed = now()),
    },
    markReady: () => void (ready = true),
    ready: () => ready,
    config: () => config,
    heartbeat$,
    liveness: () => {
      const at = now();
      const pulled = watchAliveAt();
      const lastWatchProgress =
        pulled === undefined || (pushed !== undefined && pushed > pulled) ? pushed : pulled;
      if (lastTurn !== undefined && at - lastTurn > stallMs)
        return { ok: false, reason: `the event loop has not turned for ${Math.round(at - lastTurn)} ms` };
      if (watchStuck !== undefined) {
        const stuck = watchStuck();
        return stuck === undefined ? { ok: true } : { ok: false, reason: stuck };
      }
      if (lastWatchProgress !== undefined && at - lastWatchProgress > stallMs)
        return {
          ok: false,
          reason: `the config watch has made no progress for ${Math.round(at - lastWatchProgress)} ms while the config dir exists`,
        };
      return { ok: true };
    },
  };
};

// Liveness that sees the process out of file descriptors: then no config read, download or connection works.
const exhausted = new Set(['EMFILE', 'ENFILE']);

/**
 * Why this process cannot open a file now (EMFILE: its own limit; ENFILE: the system's), or undefined when it
 * can. Opening /dev/null asks the kernel itself, whoever holds the descriptors (held connections, a leak, the
 * watcher): the agent past its limit failed reading models.json while /healthz said 200.
 */
const descriptorExhaustion = (): string | undefined => {
  try {
    closeSync(openSync('/dev/null', 'r'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (exhausted.has(code)) return `the process cannot open a file: out of file descriptors (${code})`;
  }
  return undefined;
};

/** `liveness`, failing first while the process is out of file descriptors (the kubelet restarts it). */
export const withDescriptors =
  (liveness: () => Liveness, exhaustion: () => string | undefined = descriptorExhaustion) =>
  (): Liveness => {
    const reason = exhaustion();
    return reason === undefined ? liveness() : { ok: false, reason };
  };
