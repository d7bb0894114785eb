/** KServe's agent tests W0–W14 and D1–D3 (docs/background.md) as end-to-end scenarios of modelsync. */
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { decodeConfig } from '../../src/core/decode-config';
import { snapshotEquals, type Snapshot } from '../../src/core/snapshot';
import { modelDirStore } from '../../src/model-dir/store';
import { waitFor } from '../../src/testing/wait';
import { useAgentHarness, type AgentHarness } from '../helpers/agent-harness';
import { modelsJson } from '../helpers/fixtures';

const start = useAgentHarness();

const decoded = (text: string): Snapshot => {
  const result = decodeConfig('models.json', text);
  if (result._tag === 'Left') throw new Error('fixture does not decode');
  return result.right;
};

const callsOf = (h: AgentHarness, model: string) => h.calls.filter((c) => c.name === model);
/** Temporary and set-aside dirs of the model store: none may be left once the loader is idle. */
const leftovers = async (h: AgentHarness): Promise<string[]> =>
  (await h.modelDirEntries()).filter((e) => e.startsWith('.tmp-') || e.startsWith('.old-'));

describe('KServe watcher scenarios (watcher_test.go)', () => {
  it('W0: recovers from a corrupt SUCCESS marker without crashing and downloads the listed model again', async () => {
    let uri = '';
    const h = await start({
      setup: async (h) => {
        uri = await h.localModel('models/model1', { 'model.pt': 'fresh weights' });
        h.write(modelsJson({ model1: uri }));
        for (const dir of ['bad-model', 'model1']) {
          await mkdir(join(h.modelDir, dir));
          await writeFile(join(h.modelDir, dir, 'SUCCESS.bad'), '{');
        }
        await writeFile(join(h.modelDir, 'model1', 'model.pt'), 'stale weights');
      },
    });
    await h.waitForReady();
    expect(h.sink.withMessage('corrupt model marker').length).toBe(2);
    expect(h.recovered.onDisk.size).toBe(0);
    expect(h.phases('model1')).toEqual(['Downloading', 'Loading', 'Loaded']);
    expect(await h.modelFile('model1', 'model.pt')).toBe('fresh weights');
    expect((await h.markers('model1')).map((m) => m.json)).toEqual([
      { storageUri: uri, framework: 'sklearn', memory: '100Mi' },
    ]);
    expect(await h.modelDirEntries()).toEqual(['model1']);
  });

  it('W1: downloads and loads both models at start-up, writes the spec into the markers, and recovers the same snapshot', async () => {
    let text = '';
    const h = await start({
      setup: async (h) => {
        text = modelsJson({
          model1: await h.localModel('models/model1', { 'model.pt': 'model1 weights' }),
          model2: await h.localModel('models/model2', { 'model.pt': 'model2 weights' }),
        });
        h.write(text);
      },
    });
    await h.waitForReady();
    for (const model of ['model1', 'model2']) {
      expect(h.phases(model)).toEqual(['Downloading', 'Loading', 'Loaded']);
      expect(h.loadsOf(model)).toEqual([{ name: model, complete: true, status: 200 }]);
      expect(await h.modelFile(model, 'model.pt')).toBe(`${model} weights`);
      const markers = await h.markers(model);
      expect(markers).toHaveLength(1);
      expect(markers[0]!.json).toEqual({
        storageUri: decoded(text).get(model as never)!.storageUri,
        framework: 'sklearn',
        memory: '100Mi',
      });
      // Beside the spec, the files and their sizes that start-up recovery checks.
      expect(markers[0]!.files).toEqual({
        'model.pt': Buffer.byteLength(await h.modelFile(model, 'model.pt')),
      });
    }
    expect([...h.standIn.loaded].sort()).toEqual(['model1', 'model2']);
    const recovered = await modelDirStore({ root: h.modelDir, log: pino({ level: 'silent' }) }).recover();
    expect(snapshotEquals(recovered, decoded(text))).toBe(true);
  });

  it('W2: downloads and loads models added to the config after start-up', async () => {
    const h = await start({ models: '[]' });
    await h.waitForReady();
    expect(h.events).toContainEqual({ _tag: 'Ready', modelCount: 0 });
    h.write(
      modelsJson({
        model1: await h.localModel('models/model1', { 'model.pt': 'one' }),
        model2: await h.localModel('models/model2', { 'model.pt': 'two' }),
      }),
    );
    await h.waitForPhase('model1', 'Loaded');
    await h.waitForPhase('model2', 'Loaded');
    await h.waitForIdle();
    expect(callsOf(h, 'model1')).toEqual([{ op: 'load', name: 'model1', replacing: false }]);
    expect(callsOf(h, 'model2')).toEqual([{ op: 'load', name: 'model2', replacing: false }]);
    expect(await h.modelFile('model2', 'model.pt')).toBe('two');
  });

  it('W3: unloads a model removed from the config and deletes its dir, leaving the other model untouched', async () => {
    let uri1 = '';
    const h = await start({
      setup: async (h) => {
        uri1 = await h.localModel('models/model1', { 'model.pt': 'one' });
        const uri2 = await h.localModel('models/model2', { 'model.pt': 'two' });
        h.write(modelsJson({ model1: uri1, model2: uri2 }));
      },
    });
    await h.waitForReady();
    const before = await stat(join(h.modelDir, 'model1', 'model.pt'));
    h.write(modelsJson({ model1: uri1 }));
    await h.waitForPhase('model2', 'Removed');
    await h.waitForIdle();
    expect(h.phases('model2').slice(-2)).toEqual(['Unloading', 'Removed']);
    expect(callsOf(h, 'model2')).toEqual([
      { op: 'load', name: 'model2', replacing: false },
      { op: 'unload', name: 'model2' },
    ]);
    expect(await h.modelDirEntries()).toEqual(['model1']);
    expect([...h.standIn.loaded]).toEqual(['model1']);
    expect(callsOf(h, 'model1')).toEqual([{ op: 'load', name: 'model1', replacing: false }]);
    const after = await stat(join(h.modelDir, 'model1', 'model.pt'));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it('W4: downloads a model whose storageUri changed and reloads it in place, without an unload', async () => {
    let uri1 = '';
    let uri2 = '';
    const h = await start({
      setup: async (h) => {
        uri1 = await h.localModel('models/model1', { 'model.pt': 'one' });
        uri2 = await h.localModel('models/model2', { 'model.pt': 'two v1' });
        h.write(modelsJson({ model1: uri1, model2: uri2 }));
      },
    });
    await h.waitForReady();
    const uri2v2 = await h.localModel('models/model2v2', { 'model.pt': 'two v2' });
    h.write(modelsJson({ model1: uri1, model2: uri2v2 }));
    await h.waitForPhase('model2', 'Loaded', 20_000, (s) => s.spec?.storageUri === uri2v2);
    await h.waitForIdle();
    expect(callsOf(h, 'model2')).toEqual([
      { op: 'load', name: 'model2', replacing: false },
      { op: 'load', name: 'model2', replacing: true },
    ]);
    expect(h.standIn.requests.some((r) => r.path.endsWith('/unload'))).toBe(false);
    expect(await h.modelFile('model2', 'model.pt')).toBe('two v2');
    expect((await h.markers('model2')).map((m) => m.json)).toEqual([
      { storageUri: uri2v2, framework: 'sklearn', memory: '100Mi' },
    ]);
    expect(await leftovers(h)).toEqual([]);
    expect(callsOf(h, 'model1')).toHaveLength(1);
    expect(uri2).not.toBe(uri2v2);
  });

  it('W5: marks a model Failed, writes no marker and sends no load when its download keeps failing', async () => {
    const h = await start({
      setup: (h) => {
        h.storage.file('/model1/model.joblib', 'weights');
        h.storage.fail('/model1/model.joblib', 503);
        h.write(modelsJson({ model1: `${h.storage.url}/model1/model.joblib` }));
      },
    });
    await h.waitForReady();
    const status = h.lastStatus('model1')!;
    expect(status).toMatchObject({ phase: 'Failed', attempt: 4 });
    expect(status.reason).toContain('HTTP 503');
    expect(h.phases('model1').filter((p) => p === 'Retrying')).toHaveLength(3);
    expect(h.storage.requestsFor('/model1/model.joblib')).toBe(4);
    expect(callsOf(h, 'model1')).toEqual([]);
    expect(await h.modelDirEntries()).toEqual([]);
  });

  it('W6: copies a file:// model dir tree with exact contents (in place of the GCS download)', async () => {
    const h = await start({
      setup: async (h) => {
        const uri = await h.localModel('testBucket', {
          testModel1: 'Model Contents',
          'sub/nested.bin': 'nested contents',
        });
        h.write(modelsJson({ model1: `${uri}/` }));
      },
    });
    await h.waitForReady();
    expect(h.lastStatus('model1')?.phase).toBe('Loaded');
    expect(await h.modelFile('model1', 'testModel1')).toBe('Model Contents');
    expect(await h.modelFile('model1', 'sub/nested.bin')).toBe('nested contents');
    expect(
      (await readdir(join(h.modelDir, 'model1'))).filter((f) => !f.startsWith('SUCCESS.')).sort(),
    ).toEqual(['sub', 'testModel1']);
  });

  it('W7: fails permanently with a clear reason when the local object does not exist', async () => {
    const h = await start({
      setup: async (h) => {
        const bucket = await h.localModel('testBucket', { testModel1: 'Model Contents' });
        h.write(modelsJson({ model1: `${bucket}/testModel2` }));
      },
    });
    await h.waitForReady();
    const status = h.lastStatus('model1')!;
    expect(status).toMatchObject({ phase: 'Failed', attempt: 1 });
    expect(status.reason).toBe(`local path ${join(h.storageDir, 'testBucket', 'testModel2')} does not exist`);
    expect(h.phases('model1')).toEqual(['Downloading', 'Failed']);
    expect(callsOf(h, 'model1')).toEqual([]);
    expect(await h.modelDirEntries()).toEqual([]);
  });

  it('W8: copies every object of a whole storage dir given as an absolute path', async () => {
    const h = await start({
      setup: async (h) => {
        await h.localModel('testBucket', { testModel1: 'first', testModel2: 'second' });
        h.write(modelsJson({ all: join(h.storageDir, 'testBucket') }));
      },
    });
    await h.waitForReady();
    expect(h.lastStatus('all')?.phase).toBe('Loaded');
    expect(await h.modelFile('all', 'testModel1')).toBe('first');
    expect(await h.modelFile('all', 'testModel2')).toBe('second');
  });

  it('W9: downloads and loads many models from one storage root, each into its own dir', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `model${i}`);
    const h = await start({
      setup: async (h) => {
        const entries: Record<string, string> = {};
        for (const model of names)
          entries[model] = await h.localModel(`bucket/${model}`, { 'model.pt': `${model} weights` });
        h.write(modelsJson(entries));
      },
    });
    await h.waitForReady();
    expect(h.events).toContainEqual({ _tag: 'Ready', modelCount: names.length });
    expect([...h.standIn.loaded].sort()).toEqual([...names].sort());
    expect(h.standIn.loads.every((l) => l.complete && l.status === 200)).toBe(true);
    expect(h.standIn.loads).toHaveLength(names.length);
    for (const model of names) expect(await h.modelFile(model, 'model.pt')).toBe(`${model} weights`);
  });

  it('W10: emits Ready only once every start-up model is loaded', async () => {
    const h = await start({
      loadDelayMs: 200,
      setup: async (h) => {
        h.write(
          modelsJson({
            model1: await h.localModel('models/model1', { 'model.pt': 'one' }),
            model2: await h.localModel('models/model2', { 'model.pt': 'two' }),
          }),
        );
      },
    });
    await h.waitForReady();
    expect(h.loadedAtReady).toEqual(new Set(['model1', 'model2']));
    const ready = h.events.findIndex((e) => e._tag === 'Ready');
    const lastLoaded = h.events.findLastIndex((e) => e._tag === 'Status' && e.status.phase === 'Loaded');
    expect(lastLoaded).toBeLessThan(ready);
  });

  it('W11: saves a plain HTTP file under its URL name with the exact content', async () => {
    const h = await start({
      setup: (h) => {
        h.storage.file('/model.joblib', 'Temporary content\n');
        h.write(modelsJson({ model1: `${h.storage.url}/model.joblib` }));
      },
    });
    await h.waitForReady();
    expect(await h.modelFile('model1', 'model.joblib')).toBe('Temporary content\n');
    const files = (await readdir(join(h.modelDir, 'model1'))).sort();
    expect(files).toEqual([expect.stringMatching(/^SUCCESS\.[0-9a-f]{64}$/), 'model.joblib']);
    expect(h.loadsOf('model1')).toEqual([{ name: 'model1', complete: true, status: 200 }]);
  });

  it('W12: fails permanently on HTTP 404 after a single request', async () => {
    const h = await start({
      setup: (h) => h.write(modelsJson({ model1: `${h.storage.url}/missing/model.joblib` })),
    });
    await h.waitForReady();
    const status = h.lastStatus('model1')!;
    expect(status).toMatchObject({ phase: 'Failed', attempt: 1 });
    expect(status.reason).toContain('HTTP 404');
    await h.waitForIdle();
    expect(h.storage.requestsFor('/missing/model.joblib')).toBe(1);
    expect(h.phases('model1')).toEqual(['Downloading', 'Failed']);
    expect(callsOf(h, 'model1')).toEqual([]);
    expect(await h.modelDirEntries()).toEqual([]);
  });

  it('W13: extracts tar.gz and zip archives served with archive types and saves text/plain ones as files', async () => {
    const files = { 'config.json': '{"a":1}', 'weights/layer0.bin': 'layer zero' };
    let tarBytes: Buffer = Buffer.alloc(0);
    let zipBytes: Buffer = Buffer.alloc(0);
    const h = await start({
      setup: async (h) => {
        const { storage } = h;
        await storage.tarGz('/model1.tar.gz', files, 'application/gzip');
        await storage.tarGz('/model2.tgz', files, 'application/x-gzip');
        await storage.zip('/model3.zip', files, 'application/zip');
        tarBytes = await storage.tarGz('/test.tar', files, 'text/plain');
        zipBytes = await storage.zip('/test.zip', files, 'text/plain');
        h.write(
          modelsJson({
            model1: `${storage.url}/model1.tar.gz`,
            model2: `${storage.url}/model2.tgz`,
            model3: `${storage.url}/model3.zip`,
            model4: `${storage.url}/test.tar`,
            model5: `${storage.url}/test.zip`,
          }),
        );
      },
    });
    await h.waitForReady();
    for (const model of ['model1', 'model2', 'model3']) {
      expect(h.lastStatus(model)?.phase).toBe('Loaded');
      expect(await h.modelFile(model, 'config.json')).toBe('{"a":1}');
      expect(await h.modelFile(model, 'weights/layer0.bin')).toBe('layer zero');
    }
    expect(await readFile(join(h.modelDir, 'model4', 'test.tar'))).toEqual(tarBytes);
    expect(await readFile(join(h.modelDir, 'model5', 'test.zip'))).toEqual(zipBytes);
    expect(h.standIn.loads.every((l) => l.complete && l.status === 200)).toBe(true);
  });

  it('W14: reports HTTP models through Downloading and Loading to Loaded', async () => {
    const h = await start({
      setup: (h) => {
        h.storage.file('/test.tar', 'tar as text');
        h.storage.file('/test.zip', 'zip as text');
        h.write(modelsJson({ model1: `${h.storage.url}/test.tar`, model2: `${h.storage.url}/test.zip` }));
      },
    });
    await h.waitForReady();
    expect(h.phases('model1')).toEqual(['Downloading', 'Loading', 'Loaded']);
    expect(h.phases('model2')).toEqual(['Downloading', 'Loading', 'Loaded']);
    expect(h.lastStatus('model1')?.spec?.storageUri).toBe(`${h.storage.url}/test.tar`);
    expect(h.events).toContainEqual({ _tag: 'Ready', modelCount: 2 });
  });
});

describe('KServe downloader scenarios (downloader_test.go)', () => {
  const failsWith = async (uri: string, reason: string): Promise<void> => {
    const h = await start({
      setup: async (h) =>
        h.write(
          modelsJson({
            model1: uri,
            good: await h.localModel('models/good', { 'model.pt': 'good' }),
          }),
        ),
    });
    await h.waitForReady();
    const status = h.lastStatus('model1')!;
    expect(status).toMatchObject({ phase: 'Failed', attempt: 1 });
    expect(status.reason).toContain(reason);
    expect(h.phases('model1')).toEqual(['Downloading', 'Failed']);
    expect(callsOf(h, 'model1')).toEqual([]);
    expect(h.lastStatus('good')?.phase).toBe('Loaded');
    // The failed model's staging dir goes as its attempt ends, however slow the host.
    await waitFor(
      async () => (await h.modelDirEntries()).join() === 'good',
      10_000,
      'only good in the model dir',
    );
  };

  it('D1: fails a model whose protocol is not supported (sss://)', () =>
    failsWith('sss://models/model1', 'protocol not supported for storageUri sss://models/model1'));

  it('D2: fails a model with an empty storageUri', () => failsWith('', 'there is no storageUri supplied'));

  it('D3: fails a model whose storageUri has no protocol (s3:://)', () =>
    failsWith(
      's3:://models/model1',
      'there is no protocol specified for the storageUri s3:://models/model1',
    ));
});
