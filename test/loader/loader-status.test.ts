/** Tests of the loader's statuses and status log lines on real edges: Pending, failure kinds, no secrets. */
import { EffectError } from '../../src/core/errors';
import { add } from '../../src/core/model-op';
import type { ModelStatus } from '../../src/core/model-status';
import { name, spec } from '../helpers/fixtures';
import type { LoaderHarness } from '../helpers/loader-harness';
import { atLevel } from '../helpers/log-sink';
import { harnessesPerTest } from './loader-checks';

const [x, y, z] = [name('x'), name('y'), name('z')];

describe('loader statuses', () => {
  const { started } = harnessesPerTest();

  const statusesOf = (h: LoaderHarness, model: string): ModelStatus[] =>
    h.events.flatMap((e) => (e._tag === 'Status' && e.status.modelName === model ? [e.status] : []));

  it('reports Pending, logged at debug, for a model that waits for a worker, and not for one a worker takes at once', async () => {
    const h = await started({ downloadConcurrency: 1, loadConcurrency: 1 });
    const specs = await Promise.all(['x', 'y', 'z'].map(async (m) => spec(await h.source(m))));
    const held = h.hold('download', x);

    h.push(add(x, specs[0]!), add(y, specs[1]!), add(z, specs[2]!));
    await held.reached;

    expect(statusesOf(h, z)).toEqual([
      { modelName: z, phase: 'Pending', spec: specs[2], since: expect.any(Number) as number },
    ]);
    expect(h.loader.statuses().get(z)?.phase).toBe('Pending');
    expect(h.phases(x)).toEqual(['Downloading']);
    expect(h.phases(y)).toEqual(['Downloading']); // waits for the download slot, but a worker has it
    const pending = h.sink.withMessage('model pending');
    expect(pending.map((line) => line['model'])).toEqual(['z']);
    expect(pending.every(atLevel('debug'))).toBe(true);

    held.release();
    await h.waitForPhase(z, 'Loaded');
    expect(h.phases(z)).toEqual(['Pending', 'Downloading', 'Loading', 'Loaded']);
  });

  it('times each status from the one before it', async () => {
    const h = await started({ loadDelayMs: 30 });
    h.push(add(x, spec(await h.source('x', 'twelve bytes'))));
    await h.waitForPhase(x, 'Loaded');

    const [downloading, loading, loaded] = statusesOf(h, x);
    expect([downloading?.phase, loading?.phase, loaded?.phase]).toEqual(['Downloading', 'Loading', 'Loaded']);
    expect(downloading?.durationMs).toBeUndefined(); // nothing was reported of it before
    expect(loading?.since).toBe(downloading!.since! + loading!.durationMs!);
    expect(loaded?.durationMs).toBeGreaterThanOrEqual(30); // the stand-in's load delay
    expect(h.loader.statuses().get(x)).toEqual(loaded);
  });

  it('gives Retrying and Failed statuses the kind of the failure', async () => {
    const h = await started({ maxAttempts: 2 });
    h.standIn.failNextLoads(2, 503);
    h.push(add(x, spec(await h.source('x'))));
    await h.waitForPhase(x, 'Failed');

    const failures = statusesOf(h, x).filter((s) => s.phase === 'Retrying' || s.phase === 'Failed');
    expect(failures.map((s) => [s.phase, s.errorKind, s.attempt])).toEqual([
      ['Retrying', 'http-status', 1],
      ['Failed', 'http-status', 2],
    ]);
    expect(h.sink.withMessage('model failed')[0]).toMatchObject({ model: 'x', errorKind: 'http-status' });
  });

  it('reports the kind an effect gave its error, and unknown for an error no edge classified', async () => {
    const h = await started({
      maxAttempts: 1,
      wrapServer: (server) => ({
        ...server,
        load: (model) =>
          Promise.reject(
            model === 'x'
              ? new EffectError('the model dir is read-only', false, { kind: 'filesystem' })
              : new Error('something nobody expected'),
          ),
      }),
    });
    h.push(add(x, spec(await h.source('x'))), add(y, spec(await h.source('y'))));
    await h.waitForPhase(x, 'Failed');
    await h.waitForPhase(y, 'Failed');

    expect(h.statusOf(x)).toMatchObject({ errorKind: 'filesystem', reason: 'the model dir is read-only' });
    expect(h.statusOf(y)).toMatchObject({ errorKind: 'unknown', reason: 'something nobody expected' });
  });

  it('logs the model as `model` and never the credentials of a storage URI, nor puts them in a reason', async () => {
    const h = await started({ maxAttempts: 1 });
    const { host } = new URL(h.standIn.url);
    const uri = `http://user:hunter2@${host}/models/x.tgz?X-Amz-Signature=topsecret#frag`;

    h.push(add(x, spec(uri)), add(y, spec(await h.source('y'))));
    await h.waitForPhase(x, 'Failed');
    await h.waitForPhase(y, 'Loaded');

    const statusLines = h.sink.lines.filter((line) =>
      /^model (downloading|loading|loaded|failed)/.test(line.msg),
    );
    expect(statusLines.length).toBeGreaterThanOrEqual(5);
    for (const line of statusLines) {
      expect(line).toHaveProperty('model');
      expect(line).not.toHaveProperty('modelName');
    }
    expect(statusLines.filter((line) => line.model === 'x').map((line) => line.storageUri)).toEqual([
      `http://${host}/models/x.tgz`,
      `http://${host}/models/x.tgz`,
    ]);
    // The status keeps the spec as configured (it is data); what it says in words carries no credentials.
    const everything = JSON.stringify([h.sink.lines, statusesOf(h, x).map((status) => status.reason)]);
    expect(everything).not.toContain('hunter2');
    expect(everything).not.toContain('topsecret');
  });
});
