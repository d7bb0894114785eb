import { add, remove } from '../../src/core/model-op';
import { emptySnapshot, type Snapshot } from '../../src/core/snapshot';
import { toModelOps } from '../../src/pipeline/to-model-ops';
import { name, snap, spec } from '../helpers/fixtures';
import { runMarbles } from '../helpers/marbles';

const a = spec('s3://b/a');
const b = spec('s3://b/b');
const b2 = spec('s3://b/b-v2');

describe('toModelOps', () => {
  it('emits startup Adds for the first snapshot, then only the changes', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x--y--z---|', {
        x: snap({ a }),
        y: snap({ a, b }),
        z: snap({ b: b2 }),
      });
      expectObservable(snapshot$.pipe(toModelOps(emptySnapshot))).toBe('x--y--(rs)|', {
        x: add(name('a'), a, true),
        y: add(name('b'), b, false),
        r: remove(name('a')),
        s: add(name('b'), b2, false),
      });
    }));

  it('diffs the first snapshot against what is in place, so a restart redoes nothing', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x|', { x: snap({ a, b }) });
      expectObservable(snapshot$.pipe(toModelOps(snap({ a })))).toBe('x|', { x: add(name('b'), b, true) });
    }));

  it('emits nothing for an identical snapshot', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('xx|', { x: snap({ a }) });
      expectObservable(snapshot$.pipe(toModelOps(emptySnapshot))).toBe('x-|', { x: add(name('a'), a, true) });
    }));

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<Snapshot>('|').pipe(toModelOps(snap({ a })))).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('x#', { x: snap({ a }) }).pipe(toModelOps(emptySnapshot))).toBe('x#', {
        x: add(name('a'), a, true),
      });
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('x-y-z', { x: snap({ a }), y: snap({ a, b }), z: snap({}) });
      expectObservable(source.pipe(toModelOps(emptySnapshot)), '^-!').toBe('x', {
        x: add(name('a'), a, true),
      });
      expectSubscriptions(source.subscriptions).toBe('^-!');
    }));
});
