/**
 * Kubernetes Events joined to the agent at one seam, as the HTTP surface is: `withKubeEvents` wraps the start of
 * an agent run, hears its statuses and the config reads it rejects, and hands each as an event to the recorder
 * (surface/kube-event-recorder.ts), which writes them off the agent's path to the Pod config-source's
 * `kubeEventsTarget` finds. With `--kube-events off`, the run as it was.
 */
import type { Logger } from 'pino';
import { finalize, tap } from 'rxjs';
import type { Env } from '../core/env';
import type { AppConfig } from '../core/flags/app-config';
import { configRejectedEvent, kubeEventOf } from '../core/kube-event';
import { eventWriteFailure, kubeEventsTarget } from '../config-source';
import { noTelemetry } from '../ports';
import { kubeEventRecorder, type KubeEventsWriterOf } from '../surface';
import type { AgentRun } from './surface';

export const withKubeEvents =
  (config: Pick<AppConfig, 'kubeEvents'>, log: Logger, env: Env) =>
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
    const telemetry = settings.telemetry ?? noTelemetry;
    return run(capabilities, {
      ...settings,
      telemetry: {
        ...telemetry,
        configRead: (outcome, detail) => {
          telemetry.configRead(outcome, detail);
          if (outcome === 'rejected' && recorder.active())
            recorder.record(configRejectedEvent(detail?.reason ?? 'no reason given'));
        },
      },
    }).pipe(
      tap((event) => {
        // Once nothing is written (outside a pod, or refused), an event is not even made: a burst pays nothing.
        if (!recorder.active()) return;
        const note = kubeEventOf(event);
        if (note !== undefined) recorder.record(note);
      }),
      finalize(() => void recorder.flushed()),
    );
  };
