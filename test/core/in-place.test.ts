/** Tests of inPlaceSnapshot: what counts as in place at start-up, and the ops the first diff makes from it. */
import { diff } from '../../src/core/diff';
import { add, remove } from '../../src/core/model-op';
import { specEquals, unknownSpec } from '../../src/core/snapshot';
import { adoptServerIndex, inPlaceSnapshot, installedInForce } from '../../src/core/in-place';
import { name, snap, spec } from '../helpers/fixtures';

const s1 = spec('s3://models/m1', '100Mi');
const s2 = spec('s3://models/m2', '1Gi');

describe('inPlaceSnapshot', () => {
  it('keeps the disk spec when a model is both on disk and loaded', () => {
    const result = inPlaceSnapshot({ onDisk: snap({ m1: s1, m2: s2 }), loaded: new Set(['m1', 'm2']) });
    expect([...result]).toEqual([
      [name('m1'), s1],
      [name('m2'), s2],
    ]);
  });

  it('marks a model unknownSpec when it is on disk but not loaded', () => {
    const result = inPlaceSnapshot({ onDisk: snap({ m1: s1 }), loaded: new Set() });
    expect(result.get(name('m1'))).toBe(unknownSpec);
  });

  it('marks a model unknownSpec when it is loaded but not on disk', () => {
    const result = inPlaceSnapshot({ onDisk: snap({}), loaded: new Set(['ghost']) });
    expect([...result]).toEqual([[name('ghost'), unknownSpec]]);
  });

  it('is empty when nothing is on disk or loaded', () => {
    expect(inPlaceSnapshot({ onDisk: snap({}), loaded: new Set() }).size).toBe(0);
  });

  it('classifies every model on its own when the sides overlap partly', () => {
    const result = inPlaceSnapshot({
      onDisk: snap({ both: s1, diskOnly: s2 }),
      loaded: new Set(['both', 'loadedOnly']),
    });
    expect(Object.fromEntries(result)).toEqual({ both: s1, diskOnly: unknownSpec, loadedOnly: unknownSpec });
    expect(result.get(name('diskOnly'))).toBe(unknownSpec);
    expect(result.get(name('loadedOnly'))).toBe(unknownSpec);
  });

  it('does not change its inputs', () => {
    const onDisk = snap({ m1: s1 });
    const loaded = new Set(['m2']);
    inPlaceSnapshot({ onDisk: onDisk, loaded: loaded });
    expect([...onDisk]).toEqual([[name('m1'), s1]]);
    expect([...loaded]).toEqual(['m2']);
  });
});

describe('unknownSpec', () => {
  it('equals no spec, not even itself', () => {
    expect(specEquals(unknownSpec, unknownSpec)).toBe(false);
    expect(specEquals(unknownSpec, s1)).toBe(false);
    expect(specEquals(s1, unknownSpec)).toBe(false);
    expect(specEquals(unknownSpec, { storageUri: '' })).toBe(false);
  });
});

describe('diff from the start-up snapshot', () => {
  const initial = inPlaceSnapshot({
    onDisk: snap({ inPlace: s1, diskOnly: s1, gone: s1, stale: s1 }),
    loaded: new Set(['inPlace', 'loadedOnly', 'gone', 'stale', 'ghost']),
  });

  it('adds the listed half-in-place models, removes the unlisted ones and leaves in-place ones alone', () => {
    const listed = snap({
      inPlace: spec('s3://models/m1', '100Mi'),
      diskOnly: s1,
      loadedOnly: s2,
      stale: s2,
    });
    expect(diff(initial, listed, true)).toEqual([
      remove(name('ghost')),
      remove(name('gone')),
      add(name('diskOnly'), s1, true),
      add(name('loadedOnly'), s2, true),
      add(name('stale'), s2, true),
    ]);
  });

  it('removes every model when the config lists none', () => {
    expect(diff(initial, snap({}), true)).toEqual(
      ['diskOnly', 'ghost', 'gone', 'inPlace', 'loadedOnly', 'stale'].map((n) => remove(name(n))),
    );
  });
});

describe('installedInForce: the config in force while every read since the start is rejected', () => {
  const found = {
    onDisk: snap({ inPlace: s1, diskOnly: s1, unconfirmed: s2 }),
    loaded: new Set(['inPlace', 'unconfirmed', 'serverOnly']),
    unconfirmed: new Set(['unconfirmed']),
  };

  it('loads again what is on disk and not held as it is, and unloads nothing, not even what only the server lists', () => {
    const inForce = installedInForce(found);
    expect(inForce).toBeDefined();
    expect(diff(inPlaceSnapshot(found), inForce!, true)).toEqual([
      add(name('diskOnly'), s1, true),
      add(name('unconfirmed'), s2, true),
    ]);
  });

  it('is none when nothing is on disk: a start with nothing installed waits for a valid config', () => {
    expect(installedInForce({ onDisk: snap({}), loaded: new Set(['serverOnly']) })).toBeUndefined();
  });

  it('leaves to the next good config what only the server lists, as a first config does', () => {
    const inForce = installedInForce(found)!;
    expect(diff(inForce, snap({ inPlace: s1 }))).toEqual([
      remove(name('diskOnly')),
      remove(name('serverOnly')),
      remove(name('unconfirmed')),
    ]);
    expect(diff(inForce, snap({ inPlace: s1, diskOnly: s1, unconfirmed: s2, serverOnly: s2 }))).toEqual([
      add(name('serverOnly'), s2),
    ]);
  });
});

describe('adoptServerIndex', () => {
  const ghosts = Array.from({ length: 20_000 }, (_, i) => `ghost-${String(i).padStart(5, '0')}`);

  it('takes at most the cap of 20,000 names only the server lists, the first by name, and counts the rest', () => {
    const { inPlace, deferred } = adoptServerIndex(
      { onDisk: snap({}), loaded: new Set([...ghosts].reverse()) },
      3,
    );
    expect([...inPlace.loaded]).toEqual(['ghost-00000', 'ghost-00001', 'ghost-00002']);
    expect(deferred).toBe(19_997);
  });

  it('keeps every loaded model with files on disk, whatever the cap', () => {
    const found = { onDisk: snap({ m1: s1, m2: s2 }), loaded: new Set(['m2', 'ghost', 'm1']) };
    const { inPlace, deferred } = adoptServerIndex(found, 0);
    expect([...inPlace.loaded].sort()).toEqual(['m1', 'm2']);
    expect(deferred).toBe(1);
    expect(inPlaceSnapshot(inPlace)).toEqual(inPlaceSnapshot({ ...found, loaded: new Set(['m1', 'm2']) }));
  });

  it('drops a name no config could list, without counting it', () => {
    const { inPlace, deferred } = adoptServerIndex(
      { onDisk: snap({}), loaded: new Set(['.tmp-x', 'a/b', 'ghost']) },
      5,
    );
    expect([...inPlace.loaded]).toEqual(['ghost']);
    expect(deferred).toBe(0);
  });

  it('keeps what it found else: the model dir and the unconfirmed loads', () => {
    const found = { onDisk: snap({ m1: s1 }), loaded: new Set(['m1']), unconfirmed: new Set(['m1']) };
    expect(adoptServerIndex(found, 100)).toEqual({ inPlace: found, deferred: 0 });
  });
});
