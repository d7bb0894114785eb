/** readConfig: reads models.json at each trigger, one read at a time; a read that errors is a failed read. */
import * as E from 'fp-ts/Either';
import { catchError, Observable, of, type OperatorFunction } from 'rxjs';
import { configFileName } from '../core/config-files';
import { errorCode, errorMessage, readFailed } from '../core/errors';
import type { ConfigRead } from '../ports';

/**
 * Runs `read` at a trigger, one read at a time. Triggers that arrive during a read collapse into one read after
 * it: that read must still happen (it may be the only one to see a burst's final version), but a storm of
 * events must not queue a read per event. A `read` must not error; one that does (an integrator's
 * ConfigSource, a bug) yields a failed read of models.json, so the last good config stays in force and the next
 * trigger reads again, instead of the error ending the agent. Completes when the triggers have and the last
 * read is done.
 */
export const readConfig =
  <T>(read: () => Observable<ConfigRead>): OperatorFunction<T, ConfigRead> =>
  (trigger$) =>
    new Observable<ConfigRead>((subscriber) => {
      let reading = false;
      let pending = false;
      let triggersDone = false;
      const safeRead = (): Observable<ConfigRead> =>
        read().pipe(
          catchError((cause: unknown) =>
            of(E.left(readFailed(configFileName, errorCode(cause) ?? 'EUNKNOWN', errorMessage(cause)))),
          ),
        );
      const start = (): void => {
        reading = true;
        pending = false;
        subscriber.add(
          safeRead().subscribe({
            next: (result) => subscriber.next(result),
            error: (cause: unknown) => subscriber.error(cause),
            complete: () => {
              reading = false;
              if (pending) start();
              else if (triggersDone) subscriber.complete();
            },
          }),
        );
      };
      subscriber.add(
        trigger$.subscribe({
          next: () => {
            if (reading) pending = true;
            else start();
          },
          error: (cause: unknown) => subscriber.error(cause),
          complete: () => {
            triggersDone = true;
            if (!reading) subscriber.complete();
          },
        }),
      );
    });
