import { either as E } from 'fp-ts';
import { readFailed } from '../../src/core/errors';
import { readConfig } from '../../src/pipeline/read-config';
import type { ConfigRead } from '../../src/ports';
import { runMarbles } from '../helpers/marbles';

const text = (t: string): ConfigRead => E.right({ file: 'models.json', text: t });

describe('readConfig', () => {
  it('reads once per trigger, one read at a time, in order', () =>
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
