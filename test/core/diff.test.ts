import { applyOps, diff } from '../../src/core/diff';
import { add, modelOpToJson, remove } from '../../src/core/model-op';
import { emptySnapshot, snapshotEquals } from '../../src/core/snapshot';
import { name, snap, spec } from '../helpers/fixtures';

describe('diff', () => {
  it('emits Removes, then Adds, each sorted by name', () => {
    const previous = snap({ z: spec('s3://z'), c: spec('s3://c'), keep: spec('s3://k') });
    const next = snap({ keep: spec('s3://k'), b: spec('s3://b'), a: spec('s3://a') });
    expect(diff(previous, next)).toEqual([
      remove(name('c')),
      remove(name('z')),
      add(name('a'), spec('s3://a')),
      add(name('b'), spec('s3://b')),
    ]);
  });

  it('replaces a changed model with one Add carrying the new spec', () => {
    expect(diff(snap({ m: spec('s3://v1') }), snap({ m: spec('s3://v2') }))).toEqual([
      add(name('m'), spec('s3://v2')),
    ]);
  });

  it('compares specs semantically: 1Gi equals 1024Mi, an unset memory equals 0', () => {
    expect(diff(snap({ m: spec('s3://m', '1Gi') }), snap({ m: spec('s3://m', '1024Mi') }))).toEqual([]);
    expect(diff(snap({ m: spec('s3://m') }), snap({ m: spec('s3://m', '0') }))).toEqual([]);
    expect(diff(snap({ m: spec('s3://m', '1G') }), snap({ m: spec('s3://m', '1Gi') }))).toHaveLength(1);
  });

  it('marks Adds as startup ops when asked', () => {
    expect(diff(emptySnapshot, snap({ m: spec('s3://m') }), true)).toEqual([
      add(name('m'), spec('s3://m'), true),
    ]);
  });

  it('keeps the NEW spec: a later unrelated change does not touch a changed model again (KServe bug)', () => {
    const v1 = snap({ m: spec('s3://v1') });
    const v2 = snap({ m: spec('s3://v2') });
    const v3 = snap({ m: spec('s3://v2'), other: spec('s3://o') });
    const after = applyOps(applyOps(v1, diff(v1, v2)), diff(v2, v3));
    expect(diff(v2, v3)).toEqual([add(name('other'), spec('s3://o'))]);
    expect(snapshotEquals(after, v3)).toBe(true);
  });
});

describe('modelOpToJson', () => {
  it('prints KServe field names, memory as written', () => {
    expect(modelOpToJson(add(name('m1'), spec('s3://b/m1', '1Gi'), true))).toEqual({
      op: 'Add',
      modelName: 'm1',
      modelSpec: { storageUri: 's3://b/m1', framework: 'sklearn', memory: '1Gi' },
      onStartup: true,
    });
    expect(modelOpToJson(remove(name('m1')))).toEqual({ op: 'Remove', modelName: 'm1' });
  });
});
