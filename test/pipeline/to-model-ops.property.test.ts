import fc from 'fast-check';
import { from, lastValueFrom, toArray } from 'rxjs';
import { applyOps } from '../../src/core/diff';
import type { ModelSpec } from '../../src/core/model-config';
import { snapshotEquals, type Snapshot } from '../../src/core/snapshot';
import { toModelOps } from '../../src/pipeline/to-model-ops';
import { name, spec } from '../helpers/fixtures';

const specArb: fc.Arbitrary<ModelSpec> = fc
  .tuple(
    fc.constantFrom('s3://b/1', 's3://b/2', 'gs://c/3'),
    fc.constantFrom(undefined, '1Gi', '1024Mi', '1G', '0'),
  )
  .map(([uri, memory]) => spec(uri, memory));

const snapshotArb: fc.Arbitrary<Snapshot> = fc
  .dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), specArb, { maxKeys: 6 })
  .map((models) => new Map(Object.entries(models).map(([model, s]) => [name(model), s] as const)));

describe('toModelOps (property)', () => {
  it('applying the emitted ops to what is in place gives exactly the last snapshot', async () => {
    await fc.assert(
      fc.asyncProperty(
        snapshotArb,
        fc.array(snapshotArb, { minLength: 1, maxLength: 12 }),
        async (inPlace, sequence) => {
          const ops = await lastValueFrom(from(sequence).pipe(toModelOps(inPlace), toArray()));
          expect(snapshotEquals(applyOps(inPlace, ops), sequence[sequence.length - 1]!)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never emits an op for a model whose spec did not change', async () => {
    await fc.assert(
      fc.asyncProperty(snapshotArb, async (snapshot) => {
        const ops = await lastValueFrom(from([snapshot, snapshot]).pipe(toModelOps(snapshot), toArray()));
        expect(ops).toEqual([]);
      }),
    );
  });
});
