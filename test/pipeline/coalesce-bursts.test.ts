import { coalesceBursts } from '../../src/pipeline/coalesce-bursts';
import { runMarbles } from '../helpers/marbles';

// quietMs 5, spacingMs 2 in these marbles: 1 frame = 1 ms.
const coalesce = () => coalesceBursts<string>({ quietMs: 5, spacingMs: 2 });

describe('coalesceBursts', () => {
  it('emits the first event of a burst at once and the last one after the quiet period', () =>
    runMarbles(({ cold, expectObservable }) => {
      // a burst a,b,c 1 ms apart, quiet 5 ms after c; then a lone d
      const source = cold('abc 20ms d 20ms |');
      expectObservable(source.pipe(coalesce())).toBe('a-c 4ms c 15ms d 4ms d 15ms |');
    }));

  it('follows even a single event with a trailing read', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('a 10ms |').pipe(coalesce())).toBe('a 4ms a 5ms |');
    }));

  it('reads a second event within the spacing, not only after the burst', () =>
    runMarbles(({ cold, expectObservable }) => {
      // b comes 3 ms after a: past the 2 ms spacing, so it is emitted at once, and again when quiet.
      expectObservable(cold('a--b 10ms |').pipe(coalesce())).toBe('a--b 4ms b 5ms |');
    }));

  it('keeps a storm down to one emission per spacing and one after it', () =>
    runMarbles(({ cold, expectObservable }) => {
      const storm = cold('abcdefgh 20ms |');
      expectObservable(storm.pipe(coalesce())).toBe('a-c-e-g-h 3ms h 15ms |');
    }));

  it('reads at most every 20 ms during a burst when no spacing is given', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('ab 30ms |').pipe(coalesceBursts({ quietMs: 50 }))).toBe('a 19ms b 11ms (b|)');
    }));

  it('completes at once when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('|').pipe(coalesce())).toBe('|');
    }));

  it('flushes the pending events when the source completes mid-burst', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('ab|').pipe(coalesce())).toBe('a-(bb|)');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('a-#').pipe(coalesce())).toBe('a-#');
    }));

  it('unsubscribes from the source and drops the pending events when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('ab 20ms |');
      expectObservable(source.pipe(coalesce()), '^!').toBe('a');
      expectSubscriptions(source.subscriptions).toBe('^!');
    }));
});

describe('coalesceBursts with trailing-only events', () => {
  // quietMs 5, spacingMs 4; upper-case events are direct, `s` (a step of a swap) only ends a burst.
  const coalesceSteps = () =>
    coalesceBursts<string>({
      quietMs: 5,
      spacingMs: 4,
      isDirect: (event) => event === event.toUpperCase(),
      isTrailingOnly: (event) => event === 's',
    });

  it.each([
    [
      'leads no read at a step of a swap: the direct event that ends it reads at once',
      'sD 20ms |',
      '-D 4ms D 15ms |',
    ],
    [
      'holds the trailing read back while steps go on, and reads once after them',
      's 2ms s 20ms |',
      '---- 4ms s 15ms |',
    ],
  ])('%s', (_, events, reads) =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold(events).pipe(coalesceSteps())).toBe(reads);
    }),
  );
});

describe('coalesceBursts with direct events', () => {
  // quietMs 5, spacingMs 4; upper-case events are direct (a `..data` swap), paced apart from the lower-case ones.
  const coalesceDirect = () =>
    coalesceBursts<string>({ quietMs: 5, spacingMs: 4, isDirect: (event) => event === event.toUpperCase() });

  it('emits a direct event at once even inside the spacing of another event', () =>
    runMarbles(({ cold, expectObservable }) => {
      // t (a `..<timestamp>` dir) leads the burst, D (`..data`) lands 1 ms later: both at once, then the quiet read.
      expectObservable(cold('tD 20ms |').pipe(coalesceDirect())).toBe('tD 4ms D 15ms |');
    }));

  it('paces a storm of direct events by the spacing, on their own, and still reads once after it', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('ABC 20ms |').pipe(coalesceDirect())).toBe('A 3ms C 2ms C 15ms |');
    }));

  it('completes at once when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('|').pipe(coalesceDirect())).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('A-#').pipe(coalesceDirect())).toBe('A-#');
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('tD 20ms |');
      expectObservable(source.pipe(coalesceDirect()), '^!').toBe('t');
      expectSubscriptions(source.subscriptions).toBe('^!');
    }));
});
