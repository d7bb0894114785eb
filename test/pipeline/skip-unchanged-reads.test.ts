import { either as E } from 'fp-ts';
import { readFailed } from '../../src/core/errors';
import { skipUnchangedReads } from '../../src/pipeline/skip-unchanged-reads';
import type { ConfigRead } from '../../src/ports';
import { runMarbles } from '../helpers/marbles';

const reads: Record<string, ConfigRead> = {
  a: E.right({ file: 'models.json', text: '[]' }),
  b: E.right({ file: 'models.json', text: '[ ]' }),
  m: E.left(readFailed('models.json', 'ENOENT', 'no such file')),
};

describe('skipUnchangedReads', () => {
  it('drops a read with the same bytes or the same failure as the one before it', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('aabbmmaa|', reads).pipe(skipUnchangedReads())).toBe('a-b-m-a-|', reads);
    }));

  it('tells onUnchanged of each read it drops', () =>
    runMarbles(({ cold, expectObservable, flush }) => {
      let unchanged = 0;
      expectObservable(cold('aabmm|', reads).pipe(skipUnchangedReads(() => unchanged++))).toBe(
        'a-bm-|',
        reads,
      );
      flush();
      expect(unchanged).toBe(2);
    }));

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<ConfigRead>('|').pipe(skipUnchangedReads())).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('a#', reads).pipe(skipUnchangedReads())).toBe('a#', reads);
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('ab-a', reads);
      expectObservable(source.pipe(skipUnchangedReads()), '^-!').toBe('ab', reads);
      expectSubscriptions(source.subscriptions).toBe('^-!');
    }));
});
