/** Tests of statusPages: /status answered from statuses kept sorted as they change, read from the loader once. */
import type { ModelPhase, ModelStatus } from '../../src/core/model-status';
import { statusPages } from '../../src/surface/status-pages';
import { name } from '../helpers/fixtures';

const status = (model: string, phase: ModelPhase): ModelStatus => ({ modelName: name(model), phase });

interface PageJson {
  readonly summary: { readonly models: number; readonly phases: Record<string, number> };
  readonly models: ReadonlyArray<{ readonly model: string; readonly phase: string }>;
}

describe('statusPages', () => {
  const source = (initial: ModelStatus[]) => {
    let reads = 0;
    const pages = statusPages({
      statuses: () => {
        reads++;
        return initial;
      },
      status: (model: string) => initial.find((shown) => shown.modelName === model),
      config: () => ({ source: 'config-dir' }),
      ready: () => true,
    });
    const page = (): PageJson => JSON.parse(pages.page({ limit: 100 })) as PageJson;
    return { pages, page, reads: () => reads };
  };

  it('puts a shown model’s new status in its place without reading every status again', () => {
    // Each change (a phase, a download's progress, a retry) made the next answer copy and sort every status again
    // (100,000 models: 65-120 ms, and about as much for a map by name), which /healthz then waited behind.
    const { pages, page, reads } = source([
      status('b', 'Loaded'),
      status('c', 'Loaded'),
      status('d', 'Loaded'),
    ]);
    expect(page().models.map((model) => model.model)).toEqual(['b', 'c', 'd']);
    pages.changed(status('c', 'Downloading'));
    pages.changed(status('d', 'Failed'));
    pages.changed(status('c', 'Loading'));
    pages.changed(status('e', 'Removed')); // never shown, and still not
    const now = page();
    expect(now.models.map((model) => [model.model, model.phase])).toEqual([
      ['b', 'Loaded'],
      ['c', 'Loading'],
      ['d', 'Failed'],
    ]);
    expect(now.summary).toEqual({ models: 3, phases: { Loaded: 1, Loading: 1, Failed: 1 } });
    expect(pages.model('d')).toMatchObject({ model: 'd', phase: 'Failed' });
    expect(reads()).toBe(1);
  });

  it('shows a running download’s progress, which replaces its status without a change told, at every answer', () => {
    // The loader replaces a Downloading model's status at each progress report without an event (one per report
    // would flood the agent's stream): /status kept the figures of its first answer after the phase began.
    const live = new Map<string, ModelStatus>([
      ['a', status('a', 'Loaded')],
      ['b', status('b', 'Downloading')],
    ]);
    let reads = 0;
    const pages = statusPages({
      statuses: () => {
        reads++;
        return live.values();
      },
      status: (model) => live.get(model),
      config: () => ({ source: 'config-dir' }),
      ready: () => true,
    });
    const progress = (bytes: number): void =>
      void live.set('b', { ...status('b', 'Downloading'), bytesDownloaded: bytes, bytesTotal: 100 });
    const shownBytes = () =>
      (JSON.parse(pages.page({ limit: 100 })) as { models: Array<{ bytesDownloaded?: number }> }).models[1]
        ?.bytesDownloaded;
    expect(shownBytes()).toBeUndefined();
    progress(10);
    expect(shownBytes()).toBe(10);
    expect(pages.model('b')).toMatchObject({ bytesDownloaded: 10, bytesTotal: 100 });
    progress(60);
    expect(pages.model('b')).toMatchObject({ bytesDownloaded: 60 });
    expect(shownBytes()).toBe(60);
    expect(reads).toBe(1);
  });

  it.each([
    ['added', status('a', 'Downloading'), ['a', 'b', 'c']],
    ['removed', status('b', 'Removed'), ['c']],
  ])('reads every status again once a model is %s', (_, change, shown) => {
    const statuses = [status('b', 'Loaded'), status('c', 'Loaded')];
    const { pages, page, reads } = source(statuses);
    expect(page().summary.models).toBe(2);
    statuses.splice(
      0,
      statuses.length,
      ...[...statuses, change].filter((one) => shown.includes(one.modelName)),
    );
    pages.changed(change);
    expect(page().models.map((model) => model.model)).toEqual(shown);
    expect(pages.model('b') === undefined).toBe(!shown.includes('b'));
    expect(reads()).toBe(2);
  });

  it('reads every status again after a change it was not given (a new loader)', () => {
    const statuses = [status('a', 'Loaded')];
    const { pages, page, reads } = source(statuses);
    expect(page().summary.models).toBe(1);
    statuses.push(status('b', 'Loading'));
    pages.changed();
    expect(page().models.map((model) => model.model)).toEqual(['a', 'b']);
    expect(reads()).toBe(2);
  });
});
