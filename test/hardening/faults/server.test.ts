/**
 * Faults suite, model server (in process): 5xx, 429, resets and wrong answers from the V2 stand-in while the
 * agent syncs. Each case converges, or fails with the right kind and a clear reason; nothing hangs.
 */
import type { ModelStatus } from '../../../src/core/model-status';
import type { V2Fault, V2Route } from '../../../src/testing/v2-model-server';
import { useAgentHarness, type AgentHarness } from '../../helpers/agent-harness';
import { exists } from '../../helpers/file-tree';
import { modelsJson } from '../../helpers/fixtures';
import { join } from 'node:path';

const start = useAgentHarness();

/** The Retrying and Failed statuses of `model` in the current run. */
const failures = (h: AgentHarness, model: string): ModelStatus[] =>
  h.events.flatMap((e) =>
    e._tag === 'Status' && e.status.modelName === model && ['Retrying', 'Failed'].includes(e.status.phase)
      ? [e.status]
      : [],
  );

/** Starts the agent on models m1 and m2 (local files) with `fault` injected on `route` `times` times first. */
const startWithFault = async (route: V2Route, fault: V2Fault, times: number): Promise<AgentHarness> =>
  start({
    retry: { maxAttempts: 6 },
    setup: async (h) => {
      h.standIn.injectFault(route, fault, times);
      h.write(
        modelsJson({
          m1: await h.localModel('m1', { 'model.pt': 'one' }),
          m2: await h.localModel('m2', { 'model.pt': 'two' }),
        }),
      );
    },
  });

describe('agent against a model server that fails its loads', () => {
  it.each([
    ['500', { status: 500, body: '{"error":"CUDA out of memory"}' }, 'HTTP 500: CUDA out of memory'],
    [
      '502 from a proxy, as HTML',
      { status: 502, body: '<html>Bad Gateway</html>' },
      'HTTP 502: <html>Bad Gateway',
    ],
    ['429 without Retry-After', { status: 429, body: 'slow down' }, 'HTTP 429: slow down'],
    ['429 with Retry-After', { status: 429, headers: { 'Retry-After': '1' }, body: '' }, 'HTTP 429'],
  ])('retries loads answered %s and converges', async (_, fault, reason) => {
    const h = await startWithFault('load', fault, 3);
    await h.waitForReady();
    expect([...h.standIn.loaded].sort()).toEqual(['m1', 'm2']);
    const seen = [...failures(h, 'm1'), ...failures(h, 'm2')];
    expect(seen).toHaveLength(3);
    for (const status of seen) {
      expect(status).toMatchObject({ phase: 'Retrying', errorKind: 'http-status' });
      expect(status.reason).toContain(reason);
      expect(status.reason).toMatch(/^model server load of "m[12]" \(http:\/\/127\.0\.0\.1:\d+\) returned/);
    }
  });

  it('retries loads whose connection the server resets, and converges', async () => {
    const h = await startWithFault('load', { reset: true }, 2);
    await h.waitForReady();
    expect([...h.standIn.loaded].sort()).toEqual(['m1', 'm2']);
    const seen = [...failures(h, 'm1'), ...failures(h, 'm2')];
    expect(seen.map((s) => [s.phase, s.errorKind])).toEqual([
      ['Retrying', 'network'],
      ['Retrying', 'network'],
    ]);
  });

  it('fails a model whose every load is answered 500 after its attempts, with the reason, and syncs the rest', async () => {
    const h = await start({
      retry: { maxAttempts: 3 },
      setup: async (h) => {
        h.write(modelsJson({ m1: await h.localModel('m1', { 'model.pt': 'one' }) }));
      },
    });
    await h.waitForReady();
    h.standIn.injectFault('load', { status: 500, body: '{"error":"model is corrupt"}' }, Infinity);
    h.write(
      modelsJson({
        m1: await h.localModel('m1', { 'model.pt': 'one' }),
        m2: await h.localModel('m2', { 'model.pt': 'two' }),
      }),
    );
    const failed = await h.waitForPhase('m2', 'Failed');
    expect(failed).toMatchObject({ errorKind: 'http-status', attempt: 3 });
    expect(failed.reason).toContain('returned HTTP 500: model is corrupt');
    expect([...h.standIn.loaded]).toEqual(['m1']);
  });

  it('treats a load answered 200 with a body that is not JSON as done', async () => {
    const h = await startWithFault('load', { status: 200, body: '\u0000garbage' }, 1);
    await h.waitForReady();
    expect(h.lastStatus('m1')?.phase).toBe('Loaded');
    expect(h.lastStatus('m2')?.phase).toBe('Loaded');
  });
});

describe('agent against a model server whose index is wrong', () => {
  it.each([
    ['not JSON', { status: 200, body: '<html>starting</html>' }, 'invalid-response', 'is not JSON'],
    ['JSON of another shape', { status: 200, body: '{"models":[]}' }, 'invalid-response', 'is not a list'],
    ['a 503', { status: 503, body: 'warming up' }, 'http-status', 'HTTP 503: warming up'],
  ])('waits at start while the index is %s, saying why, then syncs', async (_, fault, kind, reason) => {
    const h = await startWithFault('index', fault, 3);
    await h.waitForReady();
    // It answers (a status, a body): the line says so, never "not answering".
    const waits = h.sink.withMessage('model server answers, but not with its model list; waiting for it');
    expect(waits.map((w) => w['attempt'])).toEqual([1, 2, 3]);
    for (const wait of waits) {
      expect(wait['err']).toMatchObject({ kind });
      expect((wait['err'] as { message: string }).message).toContain(reason);
    }
    expect([...h.standIn.loaded].sort()).toEqual(['m1', 'm2']);
  });

  it('unloads a model the index lists but the config does not, and downloads one it lists without files', async () => {
    const h = await start({
      setup: async (h) => {
        h.standIn.preload('ghost', 'wanted');
        h.write(modelsJson({ wanted: await h.localModel('wanted', { 'model.pt': 'w' }) }));
      },
    });
    await h.waitForReady();
    await h.waitForIdle();
    expect([...h.standIn.loaded]).toEqual(['wanted']);
    expect(h.unloadRequests().map((r) => r.name)).toEqual(['ghost']);
    expect(h.loadsOf('wanted')).toEqual([{ name: 'wanted', complete: true, status: 200 }]);
    expect(await exists(join(h.modelDir, 'wanted', 'model.pt'))).toBe(true);
  });

  it('loads again, after a restart, a model whose load was answered 200 but which the index then omits', async () => {
    const h = await startWithFault('load', { status: 200 }, 1);
    await h.waitForReady();
    // The server said yes and loaded nothing: the agent believes it until it asks the index again.
    const pretended = ['m1', 'm2'].filter((m) => !h.standIn.loaded.has(m));
    expect(pretended).toHaveLength(1);
    expect(h.lastStatus(pretended[0]!)?.phase).toBe('Loaded');
    await h.restart();
    await h.waitForReady();
    expect([...h.standIn.loaded].sort()).toEqual(['m1', 'm2']);
    expect(h.phases(pretended[0]!)).toEqual(['Loading', 'Loaded']);
  });
});

describe('agent against a model server that fails its unloads', () => {
  it('retries an unload answered 502, then one whose connection is reset, and removes the model', async () => {
    const h = await start({
      // Each retry waits 400 ms (no jitter): time for the test to see Retrying and set the next fault first.
      retry: { baseMs: 400, maxMs: 400, maxAttempts: 6 },
      random: () => 1,
      setup: async (h) => {
        h.write(modelsJson({ m1: await h.localModel('m1', { 'model.pt': 'one' }) }));
      },
    });
    await h.waitForReady();
    h.standIn.injectFault('unload', { status: 502, body: 'Bad Gateway' }, 1);
    h.write('[]');
    await h.waitForPhase('m1', 'Retrying', 10_000, (s) => s.errorKind === 'http-status');
    h.standIn.injectFault('unload', { reset: true }, 1);
    await h.waitForPhase('m1', 'Removed');
    expect(failures(h, 'm1').map((s) => s.errorKind)).toEqual(['http-status', 'network']);
    expect(h.standIn.loaded.size).toBe(0);
    expect(await h.modelDirEntries()).toEqual([]);
  });
});
