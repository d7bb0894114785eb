import { either as E } from 'fp-ts';
import { invalidJson, readFailed } from '../../src/core/errors';
import { decodeSnapshot } from '../../src/pipeline/decode-snapshot';
import type { ConfigRead } from '../../src/ports';
import { modelsJson, snap, spec } from '../helpers/fixtures';
import { runMarbles } from '../helpers/marbles';

const file = '/mnt/configs/models.json';

describe('decodeSnapshot', () => {
  it('decodes valid text, rejects bad JSON and passes read failures through', () =>
    runMarbles(({ cold, expectObservable }) => {
      const missing = readFailed(file, 'ENOENT', 'no such file');
      const input: Record<string, ConfigRead> = {
        a: E.right({ file, text: modelsJson({ m1: 's3://b/m1' }) }),
        b: E.right({ file, text: '[' }),
        c: E.left(missing),
      };
      expectObservable(cold('abc|', input).pipe(decodeSnapshot())).toBe('abc|', {
        a: E.right(snap({ m1: spec('s3://b/m1', '100Mi') })),
        b: E.left(
          invalidJson(
            file,
            'line 1, column 2: the file ends before the JSON is complete (it may be cut short)',
          ),
        ),
        c: E.left(missing),
      });
    }));

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<ConfigRead>('|').pipe(decodeSnapshot())).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<ConfigRead>('#').pipe(decodeSnapshot())).toBe('#');
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold<ConfigRead>('--a', { a: E.right({ file, text: '[]' }) });
      expectObservable(source.pipe(decodeSnapshot()), '^!').toBe('');
      expectSubscriptions(source.subscriptions).toBe('^!');
    }));
});
