import { either as E } from 'fp-ts';
import type { Either } from 'fp-ts/Either';
import { invalidConfig, type ConfigError } from '../../src/core/errors';
import type { Snapshot } from '../../src/core/snapshot';
import { keepValid } from '../../src/pipeline/keep-valid';
import { snap, spec } from '../helpers/fixtures';
import { recordWarnings } from '../helpers/log-sink';
import { runMarbles } from '../helpers/marbles';

const good = snap({ m1: spec('s3://b/m1') });
const bad = invalidConfig('/cfg/models.json', ['[0].modelSpec.memory: expected a quantity']);
const results: Record<string, Either<ConfigError, Snapshot>> = { g: E.right(good), b: E.left(bad) };

describe('keepValid', () => {
  it('passes good snapshots on and drops a rejected config after one warn line naming the file and field', () => {
    const { lines, log } = recordWarnings();
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('gbg|', results).pipe(keepValid(log as never))).toBe('g-g|', { g: good });
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.fields['file']).toBe('/cfg/models.json');
    expect(String(lines[0]!.fields['reason'])).toContain('[0].modelSpec.memory');
  });

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(
        cold<Either<ConfigError, Snapshot>>('|').pipe(keepValid(recordWarnings().log as never)),
      ).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('g#', results).pipe(keepValid(recordWarnings().log as never))).toBe('g#', {
        g: good,
      });
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('g-g-g', results);
      expectObservable(source.pipe(keepValid(recordWarnings().log as never)), '^-!').toBe('g', { g: good });
      expectSubscriptions(source.subscriptions).toBe('^-!');
    }));

  it('keeps what was installed before the start in force at the first rejection before any accepted read, once', () => {
    const installed = snap({ m0: spec('s3://b/m0') });
    const { lines, log } = recordWarnings();
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('bbgb|', results).pipe(keepValid(log as never, installed))).toBe('i-g-|', {
        i: installed,
        g: good,
      });
    });
    expect(lines.map((line) => line.message)).toEqual([
      'config rejected; keeping the previous models',
      'no config accepted since the start: the models installed before it stay in force',
      'config rejected; keeping the previous models',
      'config rejected; keeping the previous models',
    ]);
  });

  it('keeps nothing in force for a rejection once a read was accepted, nor when nothing was installed', () =>
    runMarbles(({ cold, expectObservable }) => {
      const installed = snap({ m0: spec('s3://b/m0') });
      expectObservable(cold('gb|', results).pipe(keepValid(recordWarnings().log as never, installed))).toBe(
        'g-|',
        { g: good },
      );
      expectObservable(cold('bg|', results).pipe(keepValid(recordWarnings().log as never, snap({})))).toBe(
        '-g|',
        { g: good },
      );
    }));
});
