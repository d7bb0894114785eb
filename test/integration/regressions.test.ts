/** The KServe agent's confirmed bugs (docs/background.md), each run end to end to show modelsync avoids it. */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../src/testing/wait';
import { useAgentHarness, type AgentHarness } from '../helpers/agent-harness';
import { exists } from '../helpers/file-tree';
import { modelsJson } from '../helpers/fixtures';

const start = useAgentHarness();

describe('KServe agent bugs that modelsync must not have', () => {
  it('does not download or load a changed model again when a later update does not touch it (old spec kept)', async () => {
    const uris: Record<string, string> = {};
    const h = await start({
      setup: async (h) => {
        for (const model of ['model1', 'model2', 'model2v2', 'model3'])
          uris[model] = await h.localModel(`models/${model}`, { 'model.pt': model });
        h.write(modelsJson({ model1: uris['model1']!, model2: uris['model2']! }));
      },
    });
    await h.waitForReady();
    h.write(modelsJson({ model1: uris['model1']!, model2: uris['model2v2']! }));
    await h.waitForPhase('model2', 'Loaded', 20_000, (s) => s.spec?.storageUri === uris['model2v2']);
    await h.waitForIdle();
    const markerBefore = await h.markers('model2');

    h.write(modelsJson({ model1: uris['model1']!, model2: uris['model2v2']!, model3: uris['model3']! }));
    await h.waitForPhase('model3', 'Loaded');
    h.write(modelsJson({ model2: uris['model2v2']!, model1: uris['model1']! })); // reordered, model3 gone
    await h.waitForPhase('model3', 'Removed');
    await h.waitForIdle();

    expect(h.loadsOf('model2')).toHaveLength(2);
    expect(h.loadsOf('model1')).toHaveLength(1);
    expect(h.phases('model2').filter((p) => p === 'Downloading')).toHaveLength(2);
    expect(h.unloadRequests('model2')).toEqual([]);
    expect(await h.markers('model2')).toEqual(markerBefore);
    expect(h.sink.withMessage('config accepted').length).toBeGreaterThanOrEqual(4);
  });

  it('becomes Ready with all 150 models loaded when 150 models are listed at start-up (#2100)', async () => {
    const names = Array.from({ length: 150 }, (_, i) => `m${String(i).padStart(3, '0')}`);
    const h = await start({
      downloadConcurrency: 8,
      loadConcurrency: 4,
      setup: async (h) => {
        const uris: Record<string, string> = {};
        for (const model of names) uris[model] = await h.localModel(`bucket/${model}`, { 'model.pt': model });
        h.write(modelsJson(uris));
      },
    });
    await h.waitForReady(45_000);
    expect(h.events).toContainEqual({ _tag: 'Ready', modelCount: 150 });
    expect(h.loadedAtReady?.size).toBe(150);
    expect([...h.standIn.loaded].sort()).toEqual(names);
    expect(h.standIn.loads).toHaveLength(150);
    expect(h.standIn.loads.every((l) => l.complete && l.status === 200)).toBe(true);
    expect((await h.modelDirEntries()).filter((e) => !e.startsWith('.'))).toEqual(names);
  }, 60_000);

  describe('start-up with a Remove due (barrier hang)', () => {
    const installTwo = async (): Promise<{ h: AgentHarness; uri1: string; uri2: string }> => {
      let uri1 = '';
      let uri2 = '';
      const h = await start({
        setup: async (h) => {
          uri1 = await h.localModel('models/model1', { 'model.pt': 'one' });
          uri2 = await h.localModel('models/model2', { 'model.pt': 'two' });
          h.write(modelsJson({ model1: uri1, model2: uri2 }));
        },
      });
      await h.waitForReady();
      await h.stop();
      return { h, uri1, uri2 };
    };

    it('becomes Ready and unloads and deletes a model that the config dropped while the agent was down', async () => {
      const { h, uri1 } = await installTwo();
      h.write(modelsJson({ model1: uri1 }));
      await h.start();
      await h.waitForReady();
      expect(h.recovered.onDisk.size).toBe(2);
      expect(h.recovered.loaded).toEqual(new Set(['model1', 'model2']));
      expect(h.events).toContainEqual({ _tag: 'Ready', modelCount: 1 });
      expect(h.phases('model2')).toEqual(['Unloading', 'Removed']);
      expect(h.calls).toEqual([{ op: 'unload', name: 'model2' }]);
      expect([...h.standIn.loaded]).toEqual(['model1']);
      expect(await exists(join(h.modelDir, 'model2'))).toBe(false);
      expect(h.phases('model1')).toEqual([]); // in place: no download, no load
    });

    it('becomes Ready and replaces a model whose spec changed while the agent was down', async () => {
      const { h, uri2 } = await installTwo();
      const uri1v2 = await h.localModel('models/model1v2', { 'model.pt': 'one v2' });
      h.write(modelsJson({ model1: uri1v2, model2: uri2 }));
      await h.start();
      await h.waitForReady();
      expect(h.phases('model1')).toEqual(['Downloading', 'Loading', 'Loaded']);
      expect(h.calls).toEqual([{ op: 'load', name: 'model1', replacing: true }]);
      expect(await h.modelFile('model1', 'model.pt')).toBe('one v2');
      expect((await h.markers('model1')).map((m) => m.json)).toEqual([
        { storageUri: uri1v2, framework: 'sklearn', memory: '100Mi' },
      ]);
      expect(h.loadedAtReady).toEqual(new Set(['model1', 'model2']));
    });
  });

  it('converges to the last spec when 30 rapid updates toggle one model while others load slowly (puller deadlock)', async () => {
    const others = Array.from({ length: 8 }, (_, i) => `other${i}`);
    const uris: Record<string, string> = {};
    const config = (toggled: string): string =>
      modelsJson(
        Object.fromEntries<string>([['hot', toggled], ...others.map((m) => [m, uris[m]!] as const)]),
      );
    const h = await start({
      loadDelayMs: 150,
      downloadConcurrency: 2,
      loadConcurrency: 2,
      setup: async (h) => {
        for (const model of [...others, 'hotA', 'hotB'])
          uris[model] = await h.localModel(`models/${model}`, { 'model.pt': `${model} weights` });
        h.write(modelsJson({ hot: uris['hotA']! }));
      },
    });
    await h.waitForReady();
    for (let i = 1; i <= 30; i++) {
      h.write(config(uris[i % 2 === 0 ? 'hotA' : 'hotB']!));
      await sleep(i % 3 === 0 ? 120 : 15);
    }
    const last = uris['hotA']!; // i = 30
    await h.waitForPhase('hot', 'Loaded', 30_000, (s) => s.spec?.storageUri === last);
    await h.waitForIdle(30_000);
    expect(h.lastStatus('hot')?.spec?.storageUri).toBe(last);
    expect(await h.modelFile('hot', 'model.pt')).toBe('hotA weights');
    expect((await h.markers('hot')).map((m) => m.json)).toEqual([
      { storageUri: last, framework: 'sklearn', memory: '100Mi' },
    ]);
    for (const model of others) expect(h.lastStatus(model)?.phase).toBe('Loaded');
    expect([...h.standIn.loaded].sort()).toEqual(['hot', ...others].sort());
    expect(h.standIn.loads.every((l) => l.complete)).toBe(true);
    expect(h.sink.withMessage('config accepted').length).toBeGreaterThanOrEqual(8);
    expect((await h.modelDirEntries()).filter((e) => e.startsWith('.'))).toEqual([]);
  }, 60_000);

  it('creates a missing model dir at start-up and loads the models (nil FileInfo panic)', async () => {
    const h = await start({
      createModelDir: false,
      setup: async (h) => {
        expect(await exists(h.modelDir)).toBe(false);
        h.write(modelsJson({ model1: await h.localModel('models/model1', { 'model.pt': 'one' }) }));
      },
    });
    await h.waitForReady();
    expect((await stat(h.modelDir)).isDirectory()).toBe(true);
    expect(h.lastStatus('model1')?.phase).toBe('Loaded');
    expect(await readdir(join(h.modelDir, 'model1'))).toContain('model.pt');
    expect([...h.standIn.loaded]).toEqual(['model1']);
  });

  it('loads a replacement version again after a restart when the server refused it before the restart', async () => {
    let uriB = '';
    const h = await start({
      setup: async (h) => {
        uriB = await h.localModel('models/b', { 'model.pt': 'b' });
        h.write(modelsJson({ m1: await h.localModel('models/a', { 'model.pt': 'a' }) }));
      },
    });
    await h.waitForReady();
    h.standIn.failNextLoads(1, 400); // the server rejects version B and keeps serving A
    h.write(modelsJson({ m1: uriB }));
    await h.waitForPhase('m1', 'Failed');
    await h.restart();
    await h.waitForReady();
    await h.waitForIdle();
    expect(h.calls).toContainEqual({ op: 'load', name: 'm1', replacing: true });
    expect(h.standIn.loads.at(-1)).toEqual({ name: 'm1', complete: true, status: 200 });
    expect(h.lastStatus('m1')?.phase).toBe('Loaded');
  });
});
