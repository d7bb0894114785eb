/** Faults end to end: a flaky model server, cut downloads, unloads of unknown models, bad config edits. */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '../../src/testing/wait';
import { useAgentHarness } from '../helpers/agent-harness';
import { exists } from '../helpers/file-tree';
import { modelsJson } from '../helpers/fixtures';

const start = useAgentHarness();

describe('agent under faults', () => {
  it('retries loads the model server answers with 503 and loads the model without downloading it again', async () => {
    const h = await start({
      retry: { maxAttempts: 5 },
      setup: (h) => {
        h.storage.file('/m1/model.joblib', 'weights');
        h.standIn.failNextLoads(3, 503);
        h.write(modelsJson({ m1: `${h.storage.url}/m1/model.joblib` }));
      },
    });
    await h.waitForReady();
    expect(h.lastStatus('m1')?.phase).toBe('Loaded');
    expect(h.loadsOf('m1').map((l) => l.status)).toEqual([503, 503, 503, 200]);
    const retries = h.events.flatMap((e) =>
      e._tag === 'Status' && e.status.phase === 'Retrying' ? [e.status] : [],
    );
    expect(retries.map((s) => s.attempt)).toEqual([1, 2, 3]);
    expect(retries.every((s) => s.reason?.includes('HTTP 503'))).toBe(true);
    expect(h.phases('m1').filter((p) => p === 'Downloading')).toHaveLength(1);
    expect(h.storage.requestsFor('/m1/model.joblib')).toBe(1);
    expect(h.sink.withMessage('model step failed; retrying')).toHaveLength(3);
  });

  it('retries downloads cut mid-stream and never loads incomplete files', async () => {
    const plain = randomBytes(512 * 1024);
    const weights = randomBytes(200 * 1024).toString('hex');
    const h = await start({
      setup: async (h) => {
        h.storage.file('/plain/model.bin', plain, 'application/octet-stream');
        await h.storage.tarGz('/archive/model.tar.gz', { 'weights.txt': weights, 'config.json': '{}' });
        h.storage.cut('/plain/model.bin', 2);
        h.storage.cut('/archive/model.tar.gz', 2);
        h.write(
          modelsJson({
            plain: `${h.storage.url}/plain/model.bin`,
            archive: `${h.storage.url}/archive/model.tar.gz`,
          }),
        );
      },
    });
    await h.waitForReady();
    for (const [model, path] of [
      ['plain', '/plain/model.bin'],
      ['archive', '/archive/model.tar.gz'],
    ] as const) {
      expect(h.lastStatus(model)?.phase).toBe('Loaded');
      expect(h.storage.requests.filter((r) => r.path === path).map((r) => r.cut)).toEqual([
        true,
        true,
        false,
      ]);
      const retries = h.events.flatMap((e) =>
        e._tag === 'Status' && e.status.modelName === model && e.status.phase === 'Retrying'
          ? [e.status]
          : [],
      );
      expect(retries).toHaveLength(2);
      expect(retries.every((s) => s.reason?.includes('connection lost'))).toBe(true);
      expect(h.loadsOf(model)).toEqual([{ name: model, complete: true, status: 200 }]);
    }
    expect(h.standIn.loads.every((l) => l.complete)).toBe(true);
    expect((await readFile(join(h.modelDir, 'plain', 'model.bin'))).equals(plain)).toBe(true);
    expect(await h.modelFile('archive', 'weights.txt')).toBe(weights);
    expect((await h.modelDirEntries()).filter((e) => e.startsWith('.'))).toEqual([]);
  });

  it('counts an unload the server answers 404 as done when a model that failed to load is removed', async () => {
    const h = await start({
      unknownUnloadStatus: 404,
      setup: async (h) => {
        h.standIn.failNextLoads(1, 400);
        h.write(modelsJson({ m1: await h.localModel('models/m1', { 'model.pt': 'one' }) }));
      },
    });
    await h.waitForReady();
    expect(h.lastStatus('m1')).toMatchObject({ phase: 'Failed', attempt: 1 });
    expect(await exists(join(h.modelDir, 'm1'))).toBe(true);
    h.write('[]');
    await h.waitForPhase('m1', 'Removed');
    await h.waitForIdle();
    expect(h.phases('m1').slice(-2)).toEqual(['Unloading', 'Removed']);
    expect(h.calls.filter((c) => c.op === 'unload')).toEqual([{ op: 'unload', name: 'm1' }]);
    expect(h.unloadRequests().map((r) => r.name)).toEqual(['m1']);
    expect(h.standIn.loaded.has('m1')).toBe(false);
    expect(await h.modelDirEntries()).toEqual([]);
  });

  it('counts an unload the server answers 404 as done when the server already dropped the model', async () => {
    let uri1 = '';
    const h = await start({
      unknownUnloadStatus: 404,
      setup: async (h) => {
        uri1 = await h.localModel('models/m1', { 'model.pt': 'one' });
        const uri2 = await h.localModel('models/m2', { 'model.pt': 'two' });
        h.write(modelsJson({ m1: uri1, m2: uri2 }));
      },
    });
    await h.waitForReady();
    const dropped = await fetch(`${h.standIn.url}/v2/repository/models/m2/unload`, {
      method: 'POST',
      body: '{}',
    });
    expect(dropped.status).toBe(200);
    h.write(modelsJson({ m1: uri1 }));
    await h.waitForPhase('m2', 'Removed');
    await h.waitForIdle();
    expect(h.phases('m2')).not.toContain('Failed');
    expect(h.phases('m2')).not.toContain('Retrying');
    expect(h.calls.filter((c) => c.op === 'unload')).toEqual([{ op: 'unload', name: 'm2' }]);
    expect(await h.modelDirEntries()).toEqual(['m1']);
  });

  it('never unloads anything on bad config edits and applies the next valid update', async () => {
    const uris: Record<string, string> = {};
    const h = await start({
      setup: async (h) => {
        for (const model of ['m1', 'm2', 'm3'])
          uris[model] = await h.localModel(`models/${model}`, { 'model.pt': model });
        h.write(modelsJson({ m1: uris['m1']!, m2: uris['m2']! }));
      },
    });
    await h.waitForReady();
    const requestsBefore = h.standIn.requests.length;
    const badEdits = [
      '[{"modelName":"m1","modelSpec":{"storageUri":', // cut short
      '', // empty file
      '{"models":[]}', // not an array
      '[{"modelName":"m1","modelSpec":{"storageUri":"/x","memory":"lots"}}]', // bad quantity
      '[{"modelName":"../m1","modelSpec":{"storageUri":"/x"}}]', // bad model name
      '[{"modelSpec":{"storageUri":"/x"}}]', // no modelName (KServe: name "")
    ];
    for (const [i, text] of badEdits.entries()) {
      h.write(text);
      await waitFor(() => h.sink.withMessage('config rejected').length > i, 10_000, `bad edit ${i} rejected`);
    }
    await h.waitForIdle();
    expect(h.standIn.requests.slice(requestsBefore)).toEqual([]);
    expect([...h.standIn.loaded].sort()).toEqual(['m1', 'm2']);
    expect(await h.modelDirEntries()).toEqual(['m1', 'm2']);
    expect(h.lastStatus('m1')?.phase).toBe('Loaded');

    h.write(modelsJson({ m1: uris['m1']!, m3: uris['m3']! }));
    await h.waitForPhase('m3', 'Loaded');
    await h.waitForPhase('m2', 'Removed');
    await h.waitForIdle();
    expect(h.unloadRequests().map((r) => r.name)).toEqual(['m2']);
    expect([...h.standIn.loaded].sort()).toEqual(['m1', 'm3']);
    expect(await h.modelDirEntries()).toEqual(['m1', 'm3']);
  });
});
