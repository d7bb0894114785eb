import { either as E } from 'fp-ts';
import { readFailed } from '../../src/core/errors';
import { readConfig } from '../../src/pipeline/read-config';
import type { ConfigRead } from '../../src/ports';
import { runMarbles } from '../helpers/marbles';

const text = (t: string): ConfigRead => E.right({ file: 'models.json', text: t });

describe('readConfig', () => {
  it('reads at a trigger, one read at a time, and once more after a read that a trigger arrived during', () =>
    runMarbles(({ cold, expectObservable }) => {
      const reads = [cold('--a|', { a: text('1') }), cold('-b|', { b: text('2') })];
      let call = 0;
      const trigger$ = cold('xx|');
      expectObservable(trigger$.pipe(readConfig(() => reads[call++]!))).toBe('--a-b|', {
        a: text('1'),
        b: text('2'),
      });
    }));

  it('turns a read that errors into a failed read and goes on reading', () =>
    runMarbles(({ cold, expectObservable }) => {
      const reads = [
        cold<ConfigRead>('-#', undefined, Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })),
        cold('a|', { a: text('2') }),
      ];
      let call = 0;
      expectObservable(cold('x--x|').pipe(readConfig(() => reads[call++]!))).toBe('-e-a|', {
        e: E.left(readFailed('models.json', 'EIO', 'EIO: i/o error')),
        a: text('2'),
      });
    }));

  it('turns a read that throws before it returns an Observable into a failed read', () =>
    runMarbles(({ cold, expectObservable }) => {
      const read = (): never => {
        throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
      };
      expectObservable(cold('x|').pipe(readConfig(read))).toBe('e|', {
        e: E.left(readFailed('models.json', 'EIO', 'EIO: i/o error')),
      });
    }));

  it('collapses every trigger that arrives during a read into one read after it', () => {
    let call = 0;
    runMarbles(({ cold, expectObservable }) => {
      const reads = [cold('---a|', { a: text('1') }), cold('-b|', { b: text('2') })];
      // x at 0 starts a read (4 frames); the four triggers during it become one read.
      const trigger$ = cold('xxxxx 10ms |');
      expectObservable(trigger$.pipe(readConfig(() => reads[call++]!))).toBe('---a-b 9ms |', {
        a: text('1'),
        b: text('2'),
      });
    });
    expect(call).toBe(2);
  });

  it('completes only when the read running as the triggers complete is done', () =>
    runMarbles(({ cold, expectObservable }) => {
      const trigger$ = cold('x|');
      expectObservable(trigger$.pipe(readConfig(() => cold('---a|', { a: text('1') })))).toBe('---a|', {
        a: text('1'),
      });
    }));

  it('reads nothing when there is no trigger', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('|').pipe(readConfig(() => cold('a|', { a: text('1') })))).toBe('|');
    }));

  it('passes a trigger error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('x#').pipe(readConfig(() => cold('a|', { a: text('1') })))).toBe('a#', {
        a: text('1'),
      });
    }));

  it('cancels a read in progress when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const read = cold('----a|', { a: text('1') });
      const trigger$ = cold('x|');
      expectObservable(trigger$.pipe(readConfig(() => read)), '^-!').toBe('');
      expectSubscriptions(read.subscriptions).toBe('^-!');
    }));
});
