import { coalesceBursts } from '../../src/pipeline/coalesce-bursts';
import { runMarbles } from '../helpers/marbles';

describe('coalesceBursts', () => {
  it('emits the first event of a burst at once and the last one after the quiet period', () =>
    runMarbles(({ cold, expectObservable }) => {
      // a burst a,b,c 1 ms apart, quiet 5 ms after c; then a lone d
      const source = cold('abc 20ms d 20ms |');
      expectObservable(source.pipe(coalesceBursts(5))).toBe('a 6ms c 15ms d 4ms d 15ms |');
    }));

  it('follows even a single event with a trailing read', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('a 10ms |').pipe(coalesceBursts(5))).toBe('a 4ms a 5ms |');
    }));

  it('keeps a storm longer than the quiet period down to a leading and a trailing emission', () =>
    runMarbles(({ cold, expectObservable }) => {
      const storm = cold('a 3ms b 3ms c 3ms d 3ms e 20ms |');
      expectObservable(storm.pipe(coalesceBursts(5))).toBe('a 20ms e 15ms |');
    }));

  it('completes at once when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('|').pipe(coalesceBursts(5))).toBe('|');
    }));

  it('flushes the pending trailing event when the source completes mid-burst', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('ab|').pipe(coalesceBursts(5))).toBe('a-(b|)');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('a-#').pipe(coalesceBursts(5))).toBe('a-#');
    }));

  it('unsubscribes from the source and drops the pending trailing event when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('ab 20ms |');
      expectObservable(source.pipe(coalesceBursts(5)), '^--!').toBe('a');
      expectSubscriptions(source.subscriptions).toBe('^--!');
    }));
});
