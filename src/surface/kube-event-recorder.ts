/**
 * kubeEventRecorder: the agent's events as Kubernetes Events on its Pod, written in order by one sender off the
 * agent's path, so a slow or refusing API server never holds a load up; correlated as client-go's recorder
 * (core/kube-event.ts). Its bounds, and what it says of failures and refusals: docs/operating.md (Kubernetes Events).
 */
import type { Logger } from 'pino';
import {
  EventCorrelator,
  eventName,
  eventObject,
  eventRepeat,
  type KubeEventNote,
  type KubeEventsWriter,
} from '../core/kube-event';

/** The writer, or why there is none (`quiet`: as expected, said at debug only); asked once, at the first event. */
export type KubeEventsWriterOf = () => Promise<
  KubeEventsWriter | { readonly unavailable: string; readonly quiet?: boolean }
>;

export interface KubeEventRecorder {
  record(event: KubeEventNote): void;
  /** Resolves once what was queued is written (or dropped). */
  flushed(): Promise<void>;
  /** Events dropped so far: the queue full, the rate limit, or a failed write. */
  dropped(): number;
  /** False once it is known that nothing will be written (no writer, or refused): an event need not be made. */
  active(): boolean;
}

export interface KubeEventRecorderOptions {
  /** Events queued at most while one is written. */
  readonly maxQueued?: number;
  /** The wall clock: the Events' times (their names too); default `Date.now`. */
  readonly now?: () => number;
  /**
   * A clock that never steps, for the waits: 10 minutes after a refusal, a minute before the settings are asked for
   * again, the once-per-10-minutes warn, and the correlation's windows and spam filter; default `performance.now`. NTP setting the wall clock back an hour made each
   * an hour longer.
   */
  readonly elapsed?: () => number;
  /** Why a write failed, in words, and whether it was refused (config-source's `eventWriteFailure`). */
  readonly failure?: (error: unknown) => WriteFailure;
}

/** Why a write failed; `refused`: the credentials or the Role will not do, so no later write would succeed. */
export interface WriteFailure {
  readonly reason: string;
  readonly refused: boolean;
}

const anyFailure = (error: unknown): WriteFailure => ({ reason: String(error), refused: false });

/** A warning about failed writes at most this often; after a refusal, one write is tried again this much later. */
const warnEveryMs = 10 * 60_000;
/** Settings that could not be read (a token not mounted yet) are read again this much later. */
const settingsRetryMs = 60_000;

export const kubeEventRecorder = (
  writerOf: KubeEventsWriterOf,
  log: Logger,
  {
    maxQueued = 256,
    now = Date.now,
    elapsed = () => performance.now(),
    failure = anyFailure,
  }: KubeEventRecorderOptions = {},
): KubeEventRecorder => {
  const correlator = new EventCorrelator();
  const queue: KubeEventNote[] = [];
  let writer: Promise<KubeEventsWriter | undefined> | undefined;
  // Settings that failed to be read are asked for again from this time on.
  let writerRetryAt: number | undefined;
  let settingsWarned = false;
  let sending: Promise<void> | undefined;
  let dropped = 0;
  let warnedAt: number | undefined;
  // Refused (the Role, the credentials): nothing is written until this time, then one write is tried again, so that
  // a Role applied after the start is used without a restart, and a refusing server is asked once per 10 minutes.
  let refusedUntil: number | undefined;
  let unavailable = false;
  let sequence = 0;

  const writerNow = (): Promise<KubeEventsWriter | undefined> => {
    if (writerRetryAt !== undefined && elapsed() >= writerRetryAt) writer = writerRetryAt = undefined;
    return (writer ??= writerOf().then(
      (found) => {
        if ('unavailable' in found) {
          unavailable = true;
          log[found.quiet === true ? 'debug' : 'info'](
            { why: found.unavailable },
            'no Kubernetes Events (--kube-events auto)',
          );
          return undefined;
        }
        return found;
      },
      (error: unknown) => {
        // Said at warn once; asked again each minute (a token mounted late, a kubeconfig fixed) at debug.
        log[settingsWarned ? 'debug' : 'warn'](
          { err: error, retryInMs: settingsRetryMs },
          'no Kubernetes Events: the API server settings cannot be read',
        );
        settingsWarned = true;
        writerRetryAt = elapsed() + settingsRetryMs;
        return undefined;
      },
    ));
  };
  const isRefused = (): boolean => refusedUntil !== undefined && elapsed() < refusedUntil;

  const failed = (error: unknown): void => {
    dropped += 1;
    const { reason, refused: byTheServer } = failure(error);
    if (byTheServer) {
      refusedUntil = elapsed() + warnEveryMs;
      log.warn(
        { reason },
        'the API server refused a Kubernetes Event; none is written for 10 minutes, then one is tried',
      );
      return;
    }
    const at = elapsed();
    if (warnedAt !== undefined && at - warnedAt < warnEveryMs) return;
    warnedAt = at;
    log.warn({ reason, dropped }, 'cannot write a Kubernetes Event; dropped (said once per 10 minutes)');
  };

  const send = async (to: KubeEventsWriter, event: KubeEventNote): Promise<void> => {
    const at = now();
    // client-go's names: the object's, a dot, a number unique to this recorder.
    const freshName = () => eventName(to.pod.name, at * 1000 + (sequence++ % 1000));
    // Its spam filter and correlation windows on the clock that never steps, as client-go's (Go's monotonic clock):
    // the wall clock set back an hour dropped every Event past the burst for that hour.
    const action = correlator.next(event, elapsed(), freshName);
    if (action._tag === 'Drop') {
      dropped += 1;
      return;
    }
    try {
      if (action._tag === 'Create')
        return await to.create(eventObject(to.pod, action.name, action.event, at));
      const repeat = eventRepeat(action.count, at, action.event.message);
      if (await to.repeat(action.name, repeat)) return;
      // The API server lost it (an Event lives an hour): made anew.
      correlator.forget(action.name);
      const again = correlator.next(event, elapsed(), freshName);
      if (again._tag === 'Create') await to.create(eventObject(to.pod, again.name, again.event, at));
    } catch (error) {
      failed(error);
    }
  };

  const drain = async (): Promise<void> => {
    const to = await writerNow();
    while (queue.length > 0) {
      const event = queue.shift()!;
      if (to === undefined || isRefused()) dropped += 1;
      else await send(to, event);
    }
    sending = undefined;
  };

  return {
    record: (event) => {
      if (queue.length >= maxQueued) {
        dropped += 1;
        return;
      }
      queue.push(event);
      sending ??= drain();
    },
    flushed: async () => {
      while (sending !== undefined) await sending;
    },
    dropped: () => dropped,
    active: () => !unavailable && !isRefused(),
  };
};
