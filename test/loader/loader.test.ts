/** Tests of createLoader on real edges (model dir, local/HTTP storage, the V2 stand-in): order, coalescing, failures. */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { diff } from '../../src/core/diff';
import { add, remove } from '../../src/core/model-op';
import { snapshotOf, specToJson } from '../../src/core/snapshot';
import type { ModelServer } from '../../src/ports';
import { waitFor } from '../../src/testing/wait';
import { name, phasesOfRetriedAdd, snap, spec } from '../helpers/fixtures';
import { useHttpServers } from '../helpers/http-servers';
import { expectStrictlyInOrder, harnessesPerTest, isIdle } from './loader-checks';

const m1 = name('m1');
const m2 = name('m2');

describe('createLoader', () => {
  const { started, created } = harnessesPerTest();
  const startServer = useHttpServers();

  describe('Add', () => {
    it('downloads into <M>/<name>/ with a marker and loads when a model is added', async () => {
      const h = await started();
      const s1 = spec(await h.source('m1', 'weights of m1'), '100Mi');

      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded', s1);

      expect(h.phases(m1)).toEqual(['Downloading', 'Loading', 'Loaded']);
      expect(await readFile(join(h.modelDir, 'm1', 'model.bin'), 'utf8')).toBe('weights of m1');
      const markers = (await readdir(join(h.modelDir, 'm1'))).filter((f) => f.startsWith('SUCCESS.'));
      expect(markers).toHaveLength(1);
      expect(JSON.parse(await readFile(join(h.modelDir, 'm1', markers[0]!), 'utf8'))).toEqual({
        ...specToJson(s1),
        modelsyncFiles: { 'model.bin': 13 },
      });
      expect(h.standIn.loads).toEqual([{ name: 'm1', complete: true, status: 200 }]);
      expect([...h.standIn.loaded]).toEqual(['m1']);
      expect(h.callsOf(m1)).toEqual([
        'install:start',
        'download:start',
        'download:end',
        'install:end',
        'load:start',
        'load:end',
      ]);
      expect(await h.modelDirEntries()).toEqual(['m1']);
      expect(h.loader.statuses().get(m1)).toMatchObject({ modelName: m1, phase: 'Loaded', spec: s1 });
    });

    it('loads only complete model dirs when many models are added at once', async () => {
      const h = await started({ downloadConcurrency: 3, loadConcurrency: 2 });
      const names = Array.from({ length: 8 }, (_, i) => `model-${i}`);
      const specs = await Promise.all(names.map(async (n) => spec(await h.source(n))));

      names.forEach((n, i) => h.push(add(name(n), specs[i]!)));
      for (const [i, n] of names.entries()) await h.waitForPhase(n, 'Loaded', specs[i]);

      expect(h.standIn.loads).toHaveLength(names.length);
      expect(h.standIn.loads.every((load) => load.complete && load.status === 200)).toBe(true);
      expect(await h.modelDirEntries()).toEqual([...names].sort());
    });
  });

  describe('order', () => {
    it('runs each model’s store and server calls strictly in order when ops for several models interleave', async () => {
      const h = await started({ downloadConcurrency: 2, loadConcurrency: 1, loadDelayMs: 5 });
      const uris = {
        a1: await h.source('a1'),
        a2: await h.source('a2'),
        b1: await h.source('b1'),
        b2: await h.source('b2'),
      };
      const [a, b] = [name('a'), name('b')];

      h.push(add(a, spec(uris.a1)), add(b, spec(uris.b1)));
      await h.waitForPhase(a, 'Loaded');
      h.push(add(a, spec(uris.a2)), remove(b));
      await h.waitForPhase(b, 'Removed');
      await h.waitForPhase(a, 'Loaded', spec(uris.a2));
      h.push(add(b, spec(uris.b2)), remove(a));
      await h.waitForPhase(a, 'Removed');
      await h.waitForPhase(b, 'Loaded', spec(uris.b2));
      await h.waitForIdle();

      expectStrictlyInOrder(h.calls, a);
      expectStrictlyInOrder(h.calls, b);
      expect(h.callsOf(a, ['install', 'load', 'unload', 'remove'])).toEqual([
        'install:start',
        'install:end',
        'load:start',
        'load:end',
        'install:start',
        'install:end',
        'load:start:replacing',
        'load:end',
        'unload:start',
        'unload:end',
        'remove:start',
        'remove:end',
      ]);
      expect([...h.standIn.loaded]).toEqual(['b']);
      expect(await h.modelDirEntries()).toEqual(['b']);
    });

    it('never works on a model twice at a time when its spec keeps changing during a download', async () => {
      const h = await started();
      const uris = await Promise.all(['v1', 'v2', 'v3', 'v4'].map((v) => h.source(v)));
      const held = h.hold('download', m1);

      h.push(add(m1, spec(uris[0]!)));
      await held.reached;
      h.push(add(m1, spec(uris[1]!)), remove(m1), add(m1, spec(uris[2]!)), add(m1, spec(uris[3]!)));
      held.release();
      await h.waitForPhase(m1, 'Loaded', spec(uris[3]!));
      await h.waitForIdle();

      expectStrictlyInOrder(h.calls, m1);
      // The held download was aborted by the newer spec; the queued ones collapsed into the latest.
      const installs = h.calls.filter((c) => c.model === m1 && c.step === 'install' && c.at === 'start');
      expect(installs.map((c) => c.spec?.storageUri)).toEqual([uris[0], uris[3]]);
      expect(h.standIn.loads).toEqual([{ name: 'm1', complete: true, status: 200 }]);
      expect(await readFile(join(h.modelDir, 'm1', 'model.bin'), 'utf8')).toBe('v4');
      expect(await h.modelDirEntries()).toEqual(['m1']);
    });
  });

  describe('coalescing', () => {
    it('neither downloads nor loads a queued Add when a Remove follows it while the model is busy', async () => {
      const h = await started();
      const s1 = spec(await h.source('v1'));
      const s2 = spec(await h.source('v2'));
      const s3 = spec(await h.source('v3'));
      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded', s1);
      const held = h.hold('load', m1);

      h.push(add(m1, s2));
      await held.reached; // busy: the reload of s2 is in progress
      h.push(add(m1, s3), remove(m1));
      held.release();
      await h.waitForPhase(m1, 'Removed');
      await h.waitForIdle();

      const installs = h.calls.filter((c) => c.model === m1 && c.step === 'install' && c.at === 'start');
      expect(installs.map((c) => c.spec)).toEqual([s1, s2]);
      expect(h.callsOf(m1, ['load', 'unload', 'remove'])).toEqual([
        'load:start',
        'load:end',
        'load:start:replacing',
        'load:end',
        'unload:start',
        'unload:end',
        'remove:start',
        'remove:end',
      ]);
      expect(h.standIn.loads.map((l) => l.name)).toEqual(['m1', 'm1']);
      expect(h.standIn.loaded.size).toBe(0);
      expect(await h.modelDirEntries()).toEqual([]);
    });

    it('does no new work when an equal spec is added again to a loaded model', async () => {
      const h = await started();
      const uri = await h.source('m1');
      h.push(add(m1, spec(uri, '1Gi')));
      await h.waitForPhase(m1, 'Loaded');
      await h.waitForIdle();
      const [events, calls] = [h.events.length, h.calls.length];

      h.push(add(m1, spec(uri, '1024Mi')), add(m1, spec(uri, '1Gi'), true));

      expect(isIdle(h.loader)).toBe(true); // nothing was queued: ops are taken synchronously
      expect(h.events).toHaveLength(events);
      expect(h.calls).toHaveLength(calls);
      expect(h.standIn.loads).toHaveLength(1);
    });

    it('does no extra work when the spec in progress is added again while the model is busy', async () => {
      const h = await started();
      const s1 = spec(await h.source('m1'));
      const held = h.hold('load', m1);

      h.push(add(m1, s1));
      await held.reached;
      h.push(add(m1, s1), add(m1, { ...s1 }));
      held.release();
      await h.waitForPhase(m1, 'Loaded', s1);
      await h.waitForIdle();

      expect(h.phases(m1)).toEqual(['Downloading', 'Loading', 'Loaded']);
      expect(h.callsOf(m1, ['install', 'load'])).toEqual([
        'install:start',
        'install:end',
        'load:start',
        'load:end',
      ]);
    });

    it.each([4, 1])(
      'reports no failure when the spec changes away and back during a download (maxAttempts %d)',
      async (maxAttempts) => {
        const h = await started({ maxAttempts });
        const s1 = spec(await h.source('v1'));
        const s2 = spec(await h.source('v2'));
        const held = h.hold('download', m1);

        h.push(add(m1, s1));
        await held.reached;
        h.push(add(m1, s2), add(m1, s1)); // aborts the download of s1, then wants s1 again
        held.release();
        await h.waitForPhase(m1, 'Loaded', s1);
        await h.waitForIdle();

        // The aborted download is the loader's own doing, not a failure of s1.
        expect(h.phases(m1)).not.toContain('Retrying');
        expect(h.phases(m1)).not.toContain('Failed');
        expect(h.sink.withMessage('model failed')).toEqual([]);
        expect(h.standIn.loads).toEqual([{ name: 'm1', complete: true, status: 200 }]);
      },
    );

    it('does no work for a model that was never loaded when it is added and removed while workers are busy', async () => {
      const h = await started({ downloadConcurrency: 1, loadConcurrency: 1 });
      const [x, y, z] = [name('x'), name('y'), name('z')];
      const sources = await Promise.all(['x', 'y', 'z'].map((n) => h.source(n)));
      const holdX = h.hold('download', x);
      h.push(add(x, spec(sources[0]!)), add(y, spec(sources[1]!)));
      await holdX.reached; // both workers are busy: x downloads, y waits for the download slot

      h.push(add(z, spec(sources[2]!)), remove(z));
      holdX.release();
      await h.waitForPhase(x, 'Loaded');
      await h.waitForPhase(y, 'Loaded');
      await h.waitForIdle();

      expect(h.calls.filter((c) => c.model === 'z')).toEqual([]);
      // z waited for a worker (Pending towards its spec, then towards removal); Removed closes what was reported.
      expect(h.phases('z')).toEqual(['Pending', 'Pending', 'Removed']);
      expect(h.loader.statuses().has(z)).toBe(false);
    });
  });

  describe('Remove', () => {
    it('unloads first and deletes the files after when a model is removed', async () => {
      const dirAtUnload: boolean[] = [];
      let modelDir = '';
      const h = await started({
        onCall: (call) => {
          if (call.step === 'unload') dirAtUnload.push(existsSync(join(modelDir, call.model, 'model.bin')));
        },
      });
      modelDir = h.modelDir;
      h.push(add(m1, spec(await h.source('m1'))));
      await h.waitForPhase(m1, 'Loaded');

      h.push(remove(m1));
      await h.waitForPhase(m1, 'Removed');

      expect(h.phases(m1)).toEqual(['Downloading', 'Loading', 'Loaded', 'Unloading', 'Removed']);
      expect(h.callsOf(m1, ['unload', 'remove'])).toEqual([
        'unload:start',
        'unload:end',
        'remove:start',
        'remove:end',
      ]);
      expect(dirAtUnload).toEqual([true]);
      expect(await h.modelDirEntries()).toEqual([]);
      expect(h.standIn.loaded.size).toBe(0);
      expect(h.loader.statuses().has(m1)).toBe(false);
    });

    it('records the unload before the delete when a recording server wraps the real one', async () => {
      const order: string[] = [];
      const h = await started({
        wrapServer: (server): ModelServer => ({
          ...server,
          unload: async (model, signal) => {
            order.push(`unload ${model}; dir present: ${existsSync(join(h.modelDir, model))}`);
            await server.unload(model, signal);
          },
        }),
      });
      h.push(add(m1, spec(await h.source('m1'))));
      await h.waitForPhase(m1, 'Loaded');

      h.push(remove(m1));
      await h.waitForPhase(m1, 'Removed');
      order.push(`removed; dir present: ${existsSync(join(h.modelDir, 'm1'))}`);

      expect(order).toEqual(['unload m1; dir present: true', 'removed; dir present: false']);
    });
  });

  describe('spec change', () => {
    it('replaces a model without downtime when its spec changes', async () => {
      const seen: Array<{ step: string; current: string; aside: string[] }> = [];
      let modelDir = '';
      const snapshotDir = async (step: string): Promise<void> => {
        const entries = await readdir(modelDir);
        const aside = entries.filter((e) => e.startsWith('.old-'));
        const asideFiles = await Promise.all(
          aside.map((dir) => readFile(join(modelDir, dir, 'model.bin'), 'utf8')),
        );
        seen.push({
          step,
          current: await readFile(join(modelDir, 'm1', 'model.bin'), 'utf8'),
          aside: asideFiles,
        });
      };
      const h = await started({
        onCall: async (call) => {
          if (call.model === 'm1' && (call.step === 'download' || call.step === 'load'))
            await snapshotDir(call.step).catch(() => undefined);
        },
      });
      modelDir = h.modelDir;
      const s1 = spec(await h.source('v1'), '100Mi');
      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded', s1);
      await h.waitForIdle();
      seen.length = 0;
      const before = h.standIn.requests.length;

      const s2 = spec(await h.source('v2'), '200Mi');
      h.push(add(m1, s2));
      await h.waitForPhase(m1, 'Loaded', s2);
      await h.waitForIdle();

      // Downloaded beside the old version (which stays in place); the old files stay until the new load returns.
      expect(seen).toEqual([
        { step: 'download', current: 'v1', aside: [] },
        { step: 'load', current: 'v2', aside: ['v1'] },
      ]);
      expect(h.phases(m1).slice(3)).toEqual(['Downloading', 'Loading', 'Loaded']);
      expect(h.callsOf(m1, ['load', 'unload']).slice(2)).toEqual(['load:start:replacing', 'load:end']);
      expect(h.standIn.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([
        'POST /v2/repository/models/m1/load',
      ]);
      expect(h.standIn.loads).toEqual([
        { name: 'm1', complete: true, status: 200 },
        { name: 'm1', complete: true, status: 200 },
      ]);
      expect(await h.modelDirEntries()).toEqual(['m1']);
      expect(await readFile(join(h.modelDir, 'm1', 'model.bin'), 'utf8')).toBe('v2');
    });

    it('reports Loaded with the spec the server loaded when the spec changes during a load', async () => {
      const h = await started();
      const s1 = spec(await h.source('v1'));
      const s2 = spec(await h.source('v2'));
      const held = h.hold('load', m1);

      h.push(add(m1, s1));
      await held.reached;
      h.push(add(m1, s2)); // s2 is not even downloaded while the load of s1 is in progress
      held.release();
      await h.waitForPhase(m1, 'Loaded', s2);
      await h.waitForIdle();

      // Every Loaded status must name what is loaded: s1 first (its load was in progress), then s2.
      const loaded = h.events.flatMap((e) =>
        e._tag === 'Status' && e.status.phase === 'Loaded' ? [e.status.spec?.storageUri] : [],
      );
      expect(loaded).toEqual([s1.storageUri, s2.storageUri]);
    });

    it('never sends the load of a version superseded or removed while it waited for a load slot', async () => {
      const h = await started({ loadConcurrency: 1 });
      const [x, y, z] = [name('x'), name('y'), name('z')];
      const sx = spec(await h.source('x'));
      const [sy1, sy2, sz] = [
        spec(await h.source('y1')),
        spec(await h.source('y2')),
        spec(await h.source('z')),
      ];
      const held = h.hold('load', x);
      h.push(add(x, sx));
      await held.reached; // the only load slot is busy
      h.push(add(y, sy1), add(z, sz));
      await h.waitForPhase(y, 'Loading', sy1); // downloaded, waiting for the slot
      await h.waitForPhase(z, 'Loading', sz);

      h.push(add(y, sy2), remove(z)); // neither load waiting is wanted any more
      held.release();
      await h.waitForPhase(y, 'Loaded', sy2);
      await h.waitForPhase(z, 'Removed');
      await h.waitForIdle();

      // One load of y (its second version, which its dir held by then), none of z.
      expect(h.callsOf(y, ['load'])).toEqual(['load:start', 'load:end']);
      expect(h.callsOf(z, ['load'])).toEqual([]);
      expect(await readFile(join(h.modelDir, 'y', 'model.bin'), 'utf8')).toBe('y2');
      expect(h.sink.withMessage('model loaded').map((line) => line['model'])).toEqual(['x', 'y']);
      expect([...h.standIn.loaded].sort()).toEqual(['x', 'y']);
      expect(await h.modelDirEntries()).toEqual(['x', 'y']);
      expect(h.phases(y)).not.toContain('Failed');
      expect(h.sink.withMessage('superseded it')).toEqual([]); // no load was sent, none failed
    });

    it('neither unloads nor downloads again a model re-added while its unload waited for a load slot', async () => {
      const h = await started({ loadConcurrency: 1 });
      const [x, y] = [name('x'), name('y')];
      const [sx, sy] = [spec(await h.source('x')), spec(await h.source('y'))];
      h.push(add(y, sy));
      await h.waitForPhase(y, 'Loaded', sy);
      const held = h.hold('load', x);
      h.push(add(x, sx));
      await held.reached; // the only load slot is busy

      h.push(remove(y));
      await h.waitForPhase(y, 'Unloading'); // waiting for the slot
      h.push(add(y, sy));
      held.release();
      await h.waitForPhase(x, 'Loaded', sx);
      await h.waitForPhase(y, 'Loaded', sy);
      await h.waitForIdle();

      expect(h.callsOf(y, ['install', 'load', 'unload', 'remove'])).toEqual([
        'install:start',
        'install:end',
        'load:start',
        'load:end',
      ]);
      expect([...h.standIn.loaded].sort()).toEqual(['x', 'y']);
      expect(await readFile(join(h.modelDir, 'y', 'model.bin'), 'utf8')).toBe('y');
    });
  });

  describe('failures', () => {
    it('loads again a model added back while its unload got no answer, instead of taking it as still loaded', async () => {
      const h = await started({ config: { requestTimeoutMs: 300 } });
      const s1 = spec(await h.source('v1'));
      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded', s1);
      const held = h.hold('unload', m1);
      h.standIn.injectFault('unload', { hang: true }); // the server may unload it all the same
      h.push(remove(m1));
      await held.reached;
      h.push(add(m1, s1)); // added back while the unload is in flight
      held.release();
      await waitFor(() => h.callsOf(m1, ['load']).length === 4);
      await h.waitForPhase(m1, 'Loaded', s1);
      await h.waitForIdle();

      expect(h.callsOf(m1, ['load', 'unload'])).toEqual([
        'load:start',
        'load:end',
        'unload:start',
        'unload:fail',
        'load:start:replacing',
        'load:end',
      ]);
      expect(
        h.sink.lines.filter((line) => line['model'] === 'm1' && line['errorKind'] === 'timeout'),
      ).toEqual([expect.objectContaining({ level: 40, step: 'unload' })]);
    });

    it('logs the failure of a load sent before a newer desired state superseded it, then works on the newer one', async () => {
      const h = await started();
      const s1 = spec(await h.source('v1'));
      const s2 = spec(await h.source('v2'));
      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded', s1);
      const held = h.hold('load', m1);
      h.push(add(m1, s2));
      await held.reached; // the load of s2 is being sent
      h.standIn.failNextLoads(1, 500);
      h.push(add(m1, s1)); // changed back while it is in flight
      held.release();
      await h.waitForPhase(m1, 'Loaded', s1);
      await h.waitForIdle();

      const lines = h.sink.lines.filter((line) => line['model'] === 'm1' && line['status'] === 500);
      expect(lines).toEqual([
        expect.objectContaining({ level: 40, errorKind: 'http-status', storageUri: s2.storageUri }),
      ]);
      expect(String(lines[0]?.msg)).toContain('superseded');
      expect(h.phases(m1)).not.toContain('Failed');
    });

    it('retries a transient load failure and then loads when the server answers 503 twice', async () => {
      const h = await started();
      h.standIn.failNextLoads(2, 503);
      h.push(add(m1, spec(await h.source('m1'))));
      await h.waitForPhase(m1, 'Loaded');

      expect(h.phases(m1)).toEqual(phasesOfRetriedAdd(2, 'Loaded'));
      const retrying = h.events.flatMap((e) =>
        e._tag === 'Status' && e.status.phase === 'Retrying' ? [e.status] : [],
      );
      expect(retrying.map((s) => s.attempt)).toEqual([1, 2]);
      expect(retrying[0]!.reason).toContain('HTTP 503');
      expect(h.callsOf(m1, ['install'])).toEqual(['install:start', 'install:end']); // no new download
      expect(h.standIn.loads.map((l) => l.status)).toEqual([503, 503, 200]);
      expect(h.sink.withMessage('model step failed; retrying')).toHaveLength(2);
    });

    it('fails a model permanently and still loads the others when its local path is missing', async () => {
      const h = await started();
      const missing = join(h.storageDir, 'missing');
      const ok = spec(await h.source('ok'));

      h.push(add(m1, spec(missing)), add(m2, ok));
      await h.waitForPhase(m1, 'Failed');
      await h.waitForPhase(m2, 'Loaded', ok);

      expect(h.statusOf(m1)).toMatchObject({ phase: 'Failed', attempt: 1 });
      expect(h.statusOf(m1)?.reason).toContain(`local path ${missing} does not exist`);
      expect(h.phases(m1)).toEqual(['Downloading', 'Failed']);
      expect(h.callsOf(m1, ['load'])).toEqual([]);
      expect(await h.modelDirEntries()).toEqual(['m2']); // no staging dir left behind
      expect(h.sink.withMessage('model failed')).toHaveLength(1);
    });

    it('fails a model permanently without a retry when the server answers 400', async () => {
      const h = await started();
      h.standIn.failNextLoads(1, 400);
      h.push(add(m1, spec(await h.source('m1'))));
      await h.waitForPhase(m1, 'Failed');
      await h.waitForIdle();

      expect(h.statusOf(m1)?.reason).toContain('HTTP 400');
      expect(h.standIn.loads.map((l) => l.status)).toEqual([400]);

      h.push(add(m2, spec(await h.source('m2'))));
      await h.waitForPhase(m2, 'Loaded');
      expect(h.phases(m1)).toEqual(['Downloading', 'Loading', 'Failed']);
    });

    it('does not hold back other models when one model keeps failing', async () => {
      const h = await started({ downloadConcurrency: 1, loadConcurrency: 1, maxAttempts: 1000 });
      h.push(add(name('bad'), spec('http://127.0.0.1:2/none')));
      const others = Array.from({ length: 6 }, (_, i) => `good-${i}`);
      for (const n of others) h.push(add(name(n), spec(await h.source(n))));

      for (const n of others) await h.waitForPhase(n, 'Loaded');
      expect(h.phases('bad')).toContain('Retrying');
    });

    it('retries a failed model when its spec changes', async () => {
      const h = await started();
      h.push(add(m1, spec(join(h.storageDir, 'missing'))));
      await h.waitForPhase(m1, 'Failed');

      const fixed = spec(await h.source('m1'));
      h.push(add(m1, fixed));
      await h.waitForPhase(m1, 'Loaded', fixed);

      expect(h.phases(m1)).toEqual(['Downloading', 'Failed', 'Downloading', 'Loading', 'Loaded']);
    });

    it('retries a failed model when the same spec is added again (resync)', async () => {
      const h = await started();
      const uri = join(h.storageDir, 'later');
      h.push(add(m1, spec(uri)));
      await h.waitForPhase(m1, 'Failed');
      await h.waitForIdle();

      await h.source('later'); // the volume now holds the model
      h.push(add(m1, spec(uri)));
      await h.waitForPhase(m1, 'Loaded');

      expect(h.phases(m1)).toEqual(['Downloading', 'Failed', 'Downloading', 'Loading', 'Loaded']);
    });

    it('retries a model that failed to load with only a load when the same spec is added again', async () => {
      const h = await started();
      h.standIn.failNextLoads(1, 400);
      const s1 = spec(await h.source('m1'));
      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Failed');
      await h.waitForIdle();

      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded');

      expect(h.callsOf(m1, ['install', 'load'])).toEqual([
        'install:start',
        'install:end',
        'load:start',
        'load:fail',
        'load:start',
        'load:end',
      ]);
    });

    it('fails a model when its retries are exhausted', async () => {
      const h = await started({ maxAttempts: 3 });
      h.standIn.failNextLoads(3, 503);
      h.push(add(m1, spec(await h.source('m1'))));
      await h.waitForPhase(m1, 'Failed');
      await h.waitForIdle();

      expect(h.phases(m1)).toEqual(phasesOfRetriedAdd(2, 'Failed'));
      expect(h.statusOf(m1)).toMatchObject({ phase: 'Failed', attempt: 3 });
      expect(h.statusOf(m1)?.reason).toContain('HTTP 503');
      expect(h.standIn.loads.map((l) => l.status)).toEqual([503, 503, 503]);
    });
  });

  describe('caps', () => {
    it('keeps downloads and loads within their caps when 40 models are added at once', async () => {
      const h = await started({ downloadConcurrency: 3, loadConcurrency: 2, loadDelayMs: 20 });
      const names = Array.from({ length: 40 }, (_, i) => `model-${String(i).padStart(2, '0')}`);
      const specs = await Promise.all(names.map(async (n) => spec(await h.source(n))));

      names.forEach((n, i) => h.push(add(name(n), specs[i]!)));
      await waitFor(() => names.every((n) => h.statusOf(n)?.phase === 'Loaded'), 30_000, 'all 40 loaded');
      await h.waitForIdle();

      expect(h.loader.slots.download.highWater()).toBeLessThanOrEqual(3);
      expect(h.loader.slots.load.highWater()).toBeLessThanOrEqual(2);
      expect(h.maxInFlight('install')).toBeLessThanOrEqual(3);
      expect(h.standIn.maxConcurrentLoads).toBeLessThanOrEqual(2);
      expect(h.standIn.loads).toHaveLength(40);
      expect(h.standIn.loads.every((l) => l.complete && l.status === 200)).toBe(true);
      expect(await h.modelDirEntries()).toEqual(names);
    });
  });

  describe('unsubscribing', () => {
    /** An HTTP server that sends part of a body and then stalls; `closed` resolves when the client hangs up. */
    const stallingServer = async (): Promise<{
      url: string;
      requested: Promise<void>;
      closed: Promise<void>;
    }> => {
      let onRequest!: () => void;
      let onClose!: () => void;
      const requested = new Promise<void>((resolve) => (onRequest = resolve));
      const closed = new Promise<void>((resolve) => (onClose = resolve));
      const server = await startServer((req, res) => {
        res.on('close', onClose);
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': 1_000_000 });
        res.write(Buffer.alloc(1000), () => onRequest());
      });
      return { url: `${server.url}/model.bin`, requested, closed };
    };

    it('aborts a download in progress and leaves no staging dir when the loader is unsubscribed', async () => {
      const h = await started();
      const stalling = await stallingServer();
      h.push(add(m1, spec(stalling.url)));
      await stalling.requested;
      expect((await h.modelDirEntries()).filter((e) => e.startsWith('.tmp-'))).toHaveLength(1);

      h.stop();

      await stalling.closed; // the download's connection was dropped
      await waitFor(
        () => h.calls.some((c) => c.step === 'install' && c.at === 'fail'),
        10_000,
        'the install to end',
      );
      expect(await h.modelDirEntries()).toEqual([]);
      expect(h.standIn.requests.filter((r) => r.name !== undefined)).toEqual([]);
      expect(h.completed()).toBe(false);
    });
  });

  describe('start-up', () => {
    it('neither downloads nor loads a model that is on disk and loaded with the listed spec', async () => {
      const h = await created();
      const s1 = spec(await h.source('m1'), '100Mi');
      await h.installOnDisk('m1', s1);
      h.standIn.preload('m1');
      await h.start();

      const ops = diff(h.inPlace, snap({ m1: spec(s1.storageUri, '100Mi') }), true);
      expect(ops).toEqual([]);
      h.push(...ops, add(m1, s1, true)); // even an explicit Add of the same spec is no change
      await h.waitForIdle();

      expect(h.loader.statuses().get(m1)).toMatchObject({ modelName: m1, phase: 'Loaded', spec: s1 });
      expect(h.calls).toEqual([]);
      // No status: nothing changed. (The harness lists no models.json: the model on disk stays in force, and the
      // start turns Ready on it, as a restart on a bad or missing models.json does.)
      expect(h.events.filter((event) => event._tag !== 'Ready')).toEqual([]);
      expect(h.standIn.requests.filter((r) => r.name === 'm1')).toEqual([]);
    });

    it('downloads a model again when it was in place at start-up, then removed and added back', async () => {
      const h = await created();
      const s1 = spec(await h.source('m1'), '100Mi');
      await h.installOnDisk('m1', s1);
      h.standIn.preload('m1');
      await h.start();

      h.push(remove(m1));
      await h.waitForPhase(m1, 'Removed');
      h.push(add(m1, s1));
      await h.waitForPhase(m1, 'Loaded', s1);

      expect(h.callsOf(m1, ['install', 'load'])).toEqual([
        'install:start',
        'install:end',
        'load:start',
        'load:end',
      ]);
      expect(h.standIn.loads).toEqual([{ name: 'm1', complete: true, status: 200 }]);
    });

    it('only loads a model that is on disk but not loaded', async () => {
      const h = await created();
      const s1 = spec(await h.source('m1'));
      await h.installOnDisk('m1', s1);
      await h.start();

      h.push(...diff(h.inPlace, snapshotOf([[m1, s1]]), true));
      await h.waitForPhase(m1, 'Loaded', s1);

      expect(h.phases(m1)).toEqual(['Loading', 'Loaded']);
      expect(h.callsOf(m1)).toEqual(['load:start', 'load:end']);
      expect(h.standIn.loads).toEqual([{ name: 'm1', complete: true, status: 200 }]);
    });

    it('unloads a model that is loaded but not listed', async () => {
      const h = await created();
      h.standIn.preload('ghost');
      await h.start();

      h.push(...diff(h.inPlace, snap({}), true));
      await h.waitForPhase('ghost', 'Removed');

      expect(h.phases('ghost')).toEqual(['Unloading', 'Removed']);
      expect(h.callsOf('ghost')).toEqual(['unload:start', 'unload:end']);
      expect(h.standIn.loaded.size).toBe(0);
    });

    it('unloads and deletes a model that is on disk but neither loaded nor listed', async () => {
      const h = await created();
      await h.installOnDisk('old', spec(await h.source('old')));
      await h.start();

      h.push(...diff(h.inPlace, snap({}), true));
      await h.waitForPhase('old', 'Removed');

      expect(h.callsOf('old')).toEqual(['unload:start', 'unload:end', 'remove:start', 'remove:end']);
      expect(await h.modelDirEntries()).toEqual([]);
    });

    it('downloads again over a model that is on disk with another spec and loaded', async () => {
      const h = await created();
      await h.installOnDisk('m1', spec(await h.source('v1')));
      h.standIn.preload('m1');
      await h.start();
      const s2 = spec(await h.source('v2'));

      h.push(...diff(h.inPlace, snapshotOf([[m1, s2]]), true));
      await h.waitForPhase(m1, 'Loaded', s2);

      expect(h.callsOf(m1, ['install', 'load', 'unload'])).toEqual([
        'install:start',
        'install:end',
        'load:start:replacing',
        'load:end',
      ]);
      expect(await readFile(join(h.modelDir, 'm1', 'model.bin'), 'utf8')).toBe('v2');
    });
  });

  describe('run', () => {
    it('completes when the op source completes and all work is done, and is idle at the end', async () => {
      const h = await started({ loadDelayMs: 10 });
      h.standIn.failNextLoads(1, 503);
      const names = ['a', 'b', 'c'];
      for (const n of names) h.push(add(name(n), spec(await h.source(n))));

      h.ops$.complete();
      expect(h.completed()).toBe(false);
      await h.done;

      expect(names.map((n) => h.statusOf(n)?.phase)).toEqual(['Loaded', 'Loaded', 'Loaded']);
      expect(isIdle(h.loader)).toBe(true);
      expect([...h.standIn.loaded].sort()).toEqual(names);
    });

    it('completes at once when the op source completes with nothing to do', async () => {
      const h = await started();
      h.ops$.complete();
      await h.done;
      expect(h.events).toEqual([]);
    });

    it('reports busy while work is in progress and idle once it is done', async () => {
      const h = await started();
      const idle: boolean[] = [];
      h.loader.idle$.subscribe((value) => idle.push(value));
      h.push(add(m1, spec(await h.source('m1'))));
      await h.waitForPhase(m1, 'Loaded');
      await h.waitForIdle();

      expect(idle).toEqual([true, false, true]);
    });

    it('errors when the op source errors', async () => {
      const h = await started();
      h.ops$.error(new Error('config source broke'));
      await expect(h.done).rejects.toThrow('config source broke');
    });
  });
});
