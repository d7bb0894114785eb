/** abortable: a Promise-returning effect as an Observable that aborts the effect when unsubscribed. */
import { Observable } from 'rxjs';

/** Unlike `defer(() => promise)`, unsubscribing really stops the work: the effect's AbortSignal fires. */
export const abortable = <T>(effect: (signal: AbortSignal) => Promise<T>): Observable<T> =>
  new Observable<T>((subscriber) => {
    const controller = new AbortController();
    effect(controller.signal).then(
      (value) => {
        subscriber.next(value);
        subscriber.complete();
      },
      (error: unknown) => subscriber.error(error),
    );
    return () => controller.abort(new Error('unsubscribed'));
  });
