/** Fuzz: diff turns any snapshot into any other, touching only what differs, Removes first, each group by name. */
import fc from 'fast-check';
import { applyOps, diff } from '../../../src/core/diff';
import type { ModelSpec } from '../../../src/core/model-config';
import { snapshotEquals, specEquals, type Snapshot } from '../../../src/core/snapshot';
import { name, spec } from '../../helpers/fixtures';

// Few URIs and memories spelled several ways ("1Gi" = "1024Mi"), so equal, changed and equivalent specs all occur.
const specArb: fc.Arbitrary<ModelSpec> = fc
  .tuple(
    fc.constantFrom('s3://b/1', 's3://b/2', 'gs://c/3', '/local/4'),
    fc.constantFrom(undefined, '1Gi', '1024Mi', '1073741824', '1G', '0', '500m'),
    fc.constantFrom('sklearn', 'onnx'),
  )
  .map(([uri, memory, framework]) => spec(uri, memory, framework));

const snapshotArb = (names: fc.Arbitrary<string>): fc.Arbitrary<Snapshot> =>
  fc
    .dictionary(names, specArb, { maxKeys: 40 })
    .map((models) => new Map(Object.entries(models).map(([model, s]) => [name(model), s] as const)));

const names = fc.oneof(fc.constantFrom('a', 'b', 'c', 'd', 'e'), fc.stringMatching(/^[a-z][a-z0-9-]{0,6}$/));

describe('diff (fuzz)', () => {
  it('apply(diff(a, b), a) equals b for any two snapshots', () => {
    fc.assert(
      fc.property(snapshotArb(names), snapshotArb(names), (a, b) => {
        expect(snapshotEquals(applyOps(a, diff(a, b)), b)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('emits ops only for models that differ: Removes of the gone, then Adds of the new and changed, each by name', () => {
    fc.assert(
      fc.property(snapshotArb(names), snapshotArb(names), fc.boolean(), (a, b, onStartup) => {
        const ops = diff(a, b, onStartup);
        const removed = ops.filter((op) => op._tag === 'Remove').map((op) => op.modelName);
        const added = ops.filter((op) => op._tag === 'Add').map((op) => op.modelName);
        expect(ops.map((op) => op._tag)).toEqual([...removed.map(() => 'Remove'), ...added.map(() => 'Add')]);
        expect(removed).toEqual([...a.keys()].filter((model) => !b.has(model)).sort());
        const changed = [...b].filter(([model, s]) => !a.has(model) || !specEquals(a.get(model)!, s));
        expect(added).toEqual(changed.map(([model]) => model).sort());
        for (const op of ops) if (op._tag === 'Add') expect(op.onStartup).toBe(onStartup);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives nothing between a snapshot and itself, or an equivalent spelling of it', () => {
    const respelled = (snapshot: Snapshot): Snapshot =>
      new Map(
        [...snapshot].map(([model, s]) => [
          model,
          s.memory?.text === '1Gi' ? spec(s.storageUri, '1024Mi', s.framework) : s,
        ]),
      );
    fc.assert(
      fc.property(snapshotArb(names), (a) => {
        expect(diff(a, a)).toEqual([]);
        expect(diff(a, respelled(a))).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });
});
