/** findRepairs' cap on unloads of unlisted models: a server inventing names gets a bounded number per resync. */
import { defaultMaxUnlistedUnloads, findRepairs, type DesiredState } from '../../src/core/drift';
import { name } from '../helpers/fixtures';

const inventedNames = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `ghost-${String(i).padStart(5, '0')}`);

const unloadsAfter = (
  serverLoaded: ReadonlyArray<string>,
  after: ReadonlyArray<DesiredState> = [],
  maxUnlistedUnloads?: number,
) =>
  findRepairs({
    before: after,
    after,
    serverLoaded: new Set(serverLoaded),
    retries: new Map(),
    now: 0,
    intervalMs: 1000,
    ...(maxUnlistedUnloads !== undefined ? { maxUnlistedUnloads } : {}),
  });

/** Records of models that should be gone, in `phase`. */
const goneIn = (
  phase: DesiredState['phase'],
  settled: boolean,
  names: ReadonlyArray<string>,
): DesiredState[] => names.map((model) => ({ name: name(model), desired: undefined, phase, settled }));

describe('findRepairs', () => {
  it('unloads at most the default cap of 20,000 invented names in one resync and defers the rest', () => {
    const found = unloadsAfter(inventedNames(20_000));
    expect(found.repairs).toHaveLength(defaultMaxUnlistedUnloads);
    expect(found.repairs.every((repair) => repair.kind === 'unload-unlisted')).toBe(true);
    expect(found.deferred).toBe(20_000 - defaultMaxUnlistedUnloads);
  });

  it('counts the unloads still in progress against the cap', () => {
    const unloading = goneIn('Unloading', false, ['busy-1', 'busy-2', 'busy-3']);
    const found = unloadsAfter(inventedNames(10), unloading, 5);
    expect(found.repairs.map((repair) => repair.name)).toEqual([name('ghost-00000'), name('ghost-00001')]);
    expect(found.deferred).toBe(8);
  });

  it('counts the due retries of failed unloads against the cap, before new names, and keeps a deferred one due', () => {
    const failed = goneIn('Failed', true, ['failed-b', 'failed-a', 'failed-c']);
    const found = unloadsAfter([...inventedNames(10), 'failed-a', 'failed-b', 'failed-c'], failed, 2);
    expect(found.repairs.map(({ kind, name: model }) => `${kind} ${model}`)).toEqual([
      'retry-unload failed-a',
      'retry-unload failed-b',
    ]);
    expect(found.deferred).toBe(11);
    expect(found.retries.get(name('failed-a'))).toEqual({ retries: 1, dueAt: 1000 });
    expect(found.retries.get(name('failed-c'))).toEqual({ retries: 0, dueAt: 0 });
  });

  it('sends no more unloads a resync to a server refusing all of 20,000 invented names than to one taking them', () => {
    const found = unloadsAfter(inventedNames(20_000), goneIn('Failed', true, inventedNames(20_000)));
    expect(found.repairs).toHaveLength(defaultMaxUnlistedUnloads);
    expect(found.deferred).toBe(20_000 - defaultMaxUnlistedUnloads);
  });

  it('defers nothing while the unlisted models fit the cap, and never acts on a name no config could list', () => {
    const found = unloadsAfter(['ghost', '../etc', '.tmp-x', 'a/b'], [], 5);
    expect(found.repairs.map((repair) => repair.name)).toEqual([name('ghost')]);
    expect(found.deferred).toBe(0);
  });
});
