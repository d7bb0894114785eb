/** The config pipeline end to end on real files: kubelet swaps, plain-file edits, bad input, a late dir. */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { diff } from '../../src/core/diff';
import { decodeConfig } from '../../src/core/decode-config';
import { add, remove, type ModelOp } from '../../src/core/model-op';
import { emptySnapshot, snapshotEquals, type Snapshot } from '../../src/core/snapshot';
import { atomicWrite, removeAllKeys } from '../../src/testing/atomic-writer';
import { deleteAndRecreate, writeInPlace, writeThenRename } from '../../src/testing/plain-writers';
import { sleep, waitFor } from '../../src/testing/wait';
import { modelsJson, name, snap, spec } from '../helpers/fixtures';
import { startPipeline, type Harness } from '../helpers/pipeline-harness';

const decoded = (text: string): Snapshot => {
  const result = decodeConfig('models.json', text);
  if (result._tag === 'Left') throw new Error('fixture does not decode');
  return result.right;
};

/** The payload of swap i: a sliding window of three models, one of which changes spec every other swap. */
const payload = (i: number): string =>
  modelsJson({
    [`m${i}`]: `s3://b/m${i}`,
    [`m${i + 1}`]: `s3://b/m${i + 1}`,
    stable: { storageUri: `s3://b/stable-v${Math.floor(i / 2)}`, framework: 'onnx', memory: '1Gi' },
  });

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe('config pipeline on a kubelet-managed dir', () => {
  it('reads the current config at start-up and marks its ops onStartup', async () => {
    const h = (harness = await startPipeline());
    atomicWrite(h.configDir, { 'models.json': modelsJson({ m1: 's3://b/m1' }) });
    await h.waitForOps(1);
    await sleep(300);
    expect(h.ops).toEqual([add(name('m1'), spec('s3://b/m1', '100Mi'), true)]);
  });

  it('turns 200 consecutive swaps into exactly the expected ops: none missed, none twice', async () => {
    const h = (harness = await startPipeline());
    atomicWrite(h.configDir, { 'models.json': payload(0) });
    await h.waitForOps(3);
    let expected: ModelOp[] = [...h.ops];
    for (let i = 1; i <= 200; i++) {
      atomicWrite(h.configDir, { 'models.json': payload(i) });
      const step = diff(decoded(payload(i - 1)), decoded(payload(i)));
      expected = [...expected, ...step];
      await h.waitForOps(expected.length, 5000);
      expect(h.ops).toEqual(expected);
    }
    await sleep(400); // every trailing read has happened: still nothing extra
    expect(h.ops).toEqual(expected);
    expect(snapshotEquals(h.state(), decoded(payload(200)))).toBe(true);
  });

  it('converges to the last payload when 200 swaps come 1 ms apart, with few reads', async () => {
    const h = (harness = await startPipeline());
    atomicWrite(h.configDir, { 'models.json': payload(0) });
    await h.waitForOps(3);
    const [readsBefore, started] = [h.reads(), performance.now()];
    for (let i = 1; i <= 200; i++) {
      atomicWrite(h.configDir, { 'models.json': payload(i) });
      await sleep(1);
    }
    await waitFor(() => snapshotEquals(h.state(), decoded(payload(200))), 10_000, 'the last payload');
    await sleep(400);
    expect(snapshotEquals(h.state(), decoded(payload(200)))).toBe(true);
    // At most one read per 20 ms on each of the two paced paths while the events come, and one after them: on a
    // fast host a few dozen for 200 swaps; a slow one spreads the swaps out and is owed more, never a faster pace.
    const spanMs = performance.now() - started;
    expect(h.reads() - readsBefore).toBeLessThanOrEqual(2 * Math.ceil(spanMs / 20) + 2);
  });

  it('gives no ops when a swap publishes identical content', async () => {
    const h = (harness = await startPipeline());
    atomicWrite(h.configDir, { 'models.json': payload(0), 'other.conf': 'a' });
    await h.waitForOps(3);
    atomicWrite(h.configDir, { 'models.json': payload(0), 'other.conf': 'b' });
    await sleep(400);
    expect(h.ops).toHaveLength(3);
  });

  it('keeps the models when the ConfigMap key is removed, and picks it up when it comes back', async () => {
    const h = (harness = await startPipeline());
    atomicWrite(h.configDir, { 'models.json': modelsJson({ m1: 's3://b/m1' }) });
    await h.waitForOps(1);
    removeAllKeys(h.configDir);
    await sleep(400);
    expect(h.ops).toHaveLength(1);
    expect(h.sink.withMessage('config rejected')[0]?.['reason']).toContain('models.json');
    atomicWrite(h.configDir, { 'models.json': modelsJson({ m2: 's3://b/m2' }) });
    await h.waitForOps(3);
    expect(h.ops.slice(1)).toEqual([remove(name('m1')), add(name('m2'), spec('s3://b/m2', '100Mi'))]);
  });
});

describe('config pipeline on a plain dir', () => {
  const start = async (text: string): Promise<{ h: Harness; file: string }> => {
    const h = (harness = await startPipeline());
    await mkdir(h.configDir, { recursive: true });
    const file = join(h.configDir, 'models.json');
    await writeFile(file, text);
    return { h, file };
  };

  it('sees an in-place write caught half-way: no op from the truncated read, the full content after', async () => {
    const { h, file } = await start(modelsJson({ m1: 's3://b/m1' }));
    await h.waitForOps(1);
    await writeInPlace(file, modelsJson({ m1: 's3://b/m1', m2: 's3://b/m2' }), {
      splitAtByte: 40,
      pauseMs: 30,
    });
    await h.waitForOps(2);
    await sleep(300);
    expect(h.ops.slice(1)).toEqual([add(name('m2'), spec('s3://b/m2', '100Mi'))]);
  });

  it('sees a write-then-rename (an editor safe save)', async () => {
    const { h, file } = await start(modelsJson({ m1: 's3://b/m1' }));
    await h.waitForOps(1);
    writeThenRename(file, modelsJson({ m2: 's3://b/m2' }));
    await h.waitForOps(3);
    expect(h.ops.slice(1)).toEqual([remove(name('m1')), add(name('m2'), spec('s3://b/m2', '100Mi'))]);
  });

  it('sees a delete then re-create, and unloads nothing in between', async () => {
    const { h, file } = await start(modelsJson({ m1: 's3://b/m1' }));
    await h.waitForOps(1);
    await deleteAndRecreate(file, modelsJson({ m1: 's3://b/m1', m3: 's3://b/m3' }), 250);
    await h.waitForOps(2);
    await sleep(300);
    expect(h.ops.slice(1)).toEqual([add(name('m3'), spec('s3://b/m3', '100Mi'))]);
  });

  it('starts watching a config dir created after start-up', async () => {
    const h = (harness = await startPipeline());
    const missing = (): number => h.sink.withMessage('config dir does not exist').length;
    await waitFor(() => missing() > 0, 10_000, 'the missing dir noticed');
    await mkdir(h.configDir, { recursive: true });
    await sleep(200);
    await writeFile(join(h.configDir, 'models.json'), modelsJson({ m1: 's3://b/m1' }));
    await h.waitForOps(1);
    expect(h.ops).toEqual([add(name('m1'), spec('s3://b/m1', '100Mi'), true)]);
    expect(missing()).toBe(1); // said once, not at every recheck
  });

  it('re-arms the watch when the config dir is deleted and created again', async () => {
    const { h } = await start(modelsJson({ m1: 's3://b/m1' }));
    await h.waitForOps(1);
    await rm(h.configDir, { recursive: true });
    // Noticed either way: the dir's inode gone (removed), or chokidar failing on the vanished dir first (re-armed).
    await waitFor(
      () =>
        h.sink.withMessage('config dir removed').length > 0 ||
        h.sink.withMessage('config watcher failed').length > 0,
      10_000,
      'the removal to be noticed',
    );
    atomicWrite(h.configDir, { 'models.json': modelsJson({ m1: 's3://b/m1', m2: 's3://b/m2' }) });
    await h.waitForOps(2);
    atomicWrite(h.configDir, { 'models.json': modelsJson({ m2: 's3://b/m2' }) });
    await h.waitForOps(3);
    expect(h.ops.slice(1)).toEqual([add(name('m2'), spec('s3://b/m2', '100Mi')), remove(name('m1'))]);
  });
});

describe('config pipeline on bad input', () => {
  const good = modelsJson({ m1: 's3://b/m1', m2: 's3://b/m2' });
  const cases: ReadonlyArray<[string, string, string]> = [
    ['an empty file', '', 'the file is empty'],
    ['null', 'null', '(document): expected ModelConfigs'],
    ['invalid JSON', '[{"modelName": "m1",', 'is not valid JSON'],
    ['an entry without storageUri', '[{"modelName":"m1","modelSpec":{}}]', '[0].modelSpec.storageUri'],
    [
      'a bad memory quantity',
      '[{"modelName":"m1","modelSpec":{"storageUri":"s3://b/m1","memory":"1 gig"}}]',
      '[0].modelSpec.memory',
    ],
    [
      'a model name with a slash',
      '[{"modelName":"../m1","modelSpec":{"storageUri":"s3://b/m1"}}]',
      '[0].modelName',
    ],
    [
      'a model name starting with a dot',
      '[{"modelName":".m1","modelSpec":{"storageUri":"s3://b/m1"}}]',
      '[0].modelName',
    ],
    [
      'duplicate names',
      '[{"modelName":"m1","modelSpec":{"storageUri":"s3://b/1"}},{"modelName":"m1","modelSpec":{"storageUri":"s3://b/2"}}]',
      '[1].modelName: "m1" is already listed at [0]',
    ],
  ];

  it.each(cases)(
    'rejects %s with one line naming the file and field, then diffs the next update against the last good config',
    async (_case, bad, field) => {
      const h = (harness = await startPipeline());
      atomicWrite(h.configDir, { 'models.json': good });
      await h.waitForOps(2);
      atomicWrite(h.configDir, { 'models.json': bad });
      await waitFor(() => h.sink.withMessage('config rejected').length > 0, 5000, 'the rejection');
      await sleep(250);
      const rejections = h.sink.withMessage('config rejected');
      expect(rejections).toHaveLength(1);
      expect(rejections[0]!['file']).toBe(join(h.configDir, 'models.json'));
      expect(String(rejections[0]!['reason'])).toContain(field);
      expect(h.ops).toHaveLength(2);
      atomicWrite(h.configDir, { 'models.json': modelsJson({ m1: 's3://b/m1', m3: 's3://b/m3' }) });
      await h.waitForOps(4);
      expect(h.ops.slice(2)).toEqual([remove(name('m2')), add(name('m3'), spec('s3://b/m3', '100Mi'))]);
    },
  );

  it('emits nothing at start-up when the first config is bad, and treats the first good one as start-up', async () => {
    const h = (harness = await startPipeline({ inPlace: snap({ m0: spec('s3://b/m0') }) }));
    atomicWrite(h.configDir, { 'models.json': '[' });
    await waitFor(() => h.sink.withMessage('config rejected').length > 0, 5000, 'the rejection');
    expect(h.ops).toEqual([]);
    atomicWrite(h.configDir, { 'models.json': modelsJson({ m1: 's3://b/m1' }) });
    await h.waitForOps(2);
    expect(h.ops).toEqual([remove(name('m0')), add(name('m1'), spec('s3://b/m1', '100Mi'), true)]);
    expect(snapshotEquals(h.state(), snap({ m1: spec('s3://b/m1', '100Mi') }))).toBe(true);
    expect(emptySnapshot.size).toBe(0);
  });
});
