/** Marble tests of the example operator keepFrameworks, alone and spliced in front of toModelOps. */
import { from, lastValueFrom, toArray } from 'rxjs';
import { keepFrameworks } from '../../examples/keep-frameworks';
import { add, emptySnapshot, remove, toModelOps, type ModelSpec, type Snapshot } from 'modelsync';
import { name, snap, spec } from '../helpers/fixtures';
import { runMarbles } from '../helpers/marbles';

const onnxA = spec('s3://b/a', '1Gi', 'onnx');
const sklearnA = spec('s3://b/a', '1Gi', 'sklearn');
const onnxB = spec('s3://b/b', undefined, 'onnx');
const sklearnB = spec('s3://b/b', undefined, 'sklearn');
const tritonC = spec('s3://b/c', undefined, 'triton');
const noFramework: ModelSpec = { storageUri: 's3://b/d' };

describe('keepFrameworks', () => {
  it('keeps only the models whose framework is listed', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x-y|', {
        x: snap({ a: onnxA, b: sklearnB, c: tritonC, d: noFramework }),
        y: snap({ a: sklearnA, b: onnxB }),
      });
      expectObservable(snapshot$.pipe(keepFrameworks(['onnx', 'triton']))).toBe('x-y|', {
        x: snap({ a: onnxA, c: tritonC }),
        y: snap({ b: onnxB }),
      });
    }));

  it('emits empty snapshots when no framework is listed', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x|', { x: snap({ a: onnxA, b: sklearnB }) });
      expectObservable(snapshot$.pipe(keepFrameworks([]))).toBe('x|', { x: emptySnapshot });
    }));

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<Snapshot>('|').pipe(keepFrameworks(['onnx']))).toBe('|');
    }));

  it('passes an error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x#', { x: snap({ a: onnxA, b: sklearnB }) });
      expectObservable(snapshot$.pipe(keepFrameworks(['onnx']))).toBe('x#', { x: snap({ a: onnxA }) });
    }));

  it('unsubscribes from the source when unsubscribed', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('x-y-z', { x: snap({ a: onnxA }), y: snap({}), z: snap({ b: onnxB }) });
      expectObservable(source.pipe(keepFrameworks(['onnx'])), '^-!').toBe('x', { x: snap({ a: onnxA }) });
      expectSubscriptions(source.subscriptions).toBe('^-!');
    }));

  it('removes a model whose framework leaves the list when spliced in front of toModelOps', async () => {
    const snapshot1 = snap({ a: onnxA, b: sklearnB, c: tritonC });
    const snapshot2 = snap({ a: sklearnA, b: onnxB, c: spec('s3://b/c-v2', undefined, 'triton') });
    const ops = await lastValueFrom(
      from([snapshot1, snapshot2]).pipe(keepFrameworks(['onnx']), toModelOps(emptySnapshot), toArray()),
    );
    expect(ops).toEqual([add(name('a'), onnxA, true), remove(name('a')), add(name('b'), onnxB, false)]);
  });

  it('emits no op when only models of unlisted frameworks change', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x-y|', {
        x: snap({ a: onnxA, b: sklearnB }),
        y: snap({ a: onnxA, b: spec('s3://b/b-v2', undefined, 'sklearn'), c: tritonC }),
      });
      expectObservable(snapshot$.pipe(keepFrameworks(['onnx']), toModelOps(emptySnapshot))).toBe('x--|', {
        x: add(name('a'), onnxA, true),
      });
    }));

  it('removes a model in place at start-up whose framework is not listed', () =>
    runMarbles(({ cold, expectObservable }) => {
      const snapshot$ = cold('x|', { x: snap({ a: onnxA, b: sklearnB }) });
      const initial = snap({ a: onnxA, b: sklearnB });
      expectObservable(snapshot$.pipe(keepFrameworks(['onnx']), toModelOps(initial))).toBe('x|', {
        x: remove(name('b')),
      });
    }));
});
