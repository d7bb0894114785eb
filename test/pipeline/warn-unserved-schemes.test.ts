/** Marble tests of warnUnservedSchemes: warns about storage schemes no provider serves, once per model and URI. */
import type { Snapshot } from '../../src/core/snapshot';
import { warnUnservedSchemes } from '../../src/pipeline/warn-unserved-schemes';
import { snap, spec } from '../helpers/fixtures';
import { recordWarnings } from '../helpers/log-sink';
import { runMarbles } from '../helpers/marbles';

const schemes = ['file', 'http', 'https'];
const a = snap({ m1: spec('https://host/m1.tgz'), m2: spec('s3://bucket/m2?X-Amz-Signature=abc') });
const b = snap({
  m1: spec('https://host/m1.tgz'),
  m2: spec('s3://bucket/m2?X-Amz-Signature=abc'),
  m3: spec('gs://b/m3'),
});
const c = snap({ m1: spec('https://host/m1.tgz') });
const snapshots: Record<string, Snapshot> = { a, b, c };

describe('warnUnservedSchemes', () => {
  it('passes snapshots through and warns once per model and URI whose scheme no provider serves', () => {
    const { lines, log } = recordWarnings();
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('abca|', snapshots).pipe(warnUnservedSchemes(schemes, log as never))).toBe(
        'abca|',
        snapshots,
      );
    });
    expect(lines.map((line) => [line.fields['model'], line.fields['scheme'], line.message])).toEqual([
      ['m2', 's3', 'no storage provider serves s3://; the model will fail'],
      ['m3', 'gs', 'no storage provider serves gs://; the model will fail'],
      ['m2', 's3', 'no storage provider serves s3://; the model will fail'],
    ]);
    expect(lines[0]!.fields).toMatchObject({ storageUri: 's3://bucket/m2', servedSchemes: schemes });
  });

  it('says nothing when every scheme is served', () => {
    const { lines, log } = recordWarnings();
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold('c|', snapshots).pipe(warnUnservedSchemes(schemes, log as never))).toBe(
        'c|',
        snapshots,
      );
    });
    expect(lines).toEqual([]);
  });

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(
        cold<Snapshot>('|').pipe(warnUnservedSchemes(schemes, recordWarnings().log as never)),
      ).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(
        cold('c#', snapshots).pipe(warnUnservedSchemes(schemes, recordWarnings().log as never)),
      ).toBe('c#', snapshots);
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('c-c-c', snapshots);
      expectObservable(source.pipe(warnUnservedSchemes(schemes, recordWarnings().log as never)), '^-!').toBe(
        'c',
        snapshots,
      );
      expectSubscriptions(source.subscriptions).toBe('^-!');
    }));
});
