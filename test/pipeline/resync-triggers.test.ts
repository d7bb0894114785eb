import { resyncTriggers } from '../../src/pipeline/resync-triggers';
import { runMarbles } from '../helpers/marbles';

describe('resyncTriggers', () => {
  it('emits timer every interval and signal on each signal, the signal not restarting the timer', () =>
    runMarbles(({ cold, expectObservable }) => {
      const signal$ = cold('-----h');
      expectObservable(resyncTriggers({ intervalMs: 3, signal$ }), '^ 9ms !').toBe('---t-st--t', {
        t: 'timer',
        s: 'signal',
      });
    }));

  it('emits only on signals when the interval is 0, and completes with them', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(resyncTriggers({ intervalMs: 0, signal$: cold('-h-h|') })).toBe('-s-s|', {
        s: 'signal',
      });
    }));

  it('completes without emitting when there is no timer and no signal', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(resyncTriggers({ intervalMs: 0, signal$: cold('|') })).toBe('|');
    }));

  it('passes an error of the signals through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(resyncTriggers({ intervalMs: 5, signal$: cold('--#') })).toBe('--#');
    }));

  it('unsubscribes from the signals when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const signal$ = cold('-----h');
      expectObservable(resyncTriggers({ intervalMs: 10, signal$ }), '^--!').toBe('');
      expectSubscriptions(signal$.subscriptions).toBe('^--!');
    }));
});
