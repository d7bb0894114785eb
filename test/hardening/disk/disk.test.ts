/**
 * Faults (disk): a full disk and a read-only model dir under the whole agent. A tmpfs is mounted over the model dir
 * where the test may mount (root here and in CI); the same faults are also injected at the fs layer, and only
 * those run where mounting is not permitted. The test names say which ran.
 */
import { startAgentHarness, type AgentHarness } from '../../helpers/agent-harness';
import { modelsJson } from '../../helpers/fixtures';
import { ballastName, diskModes, faultyDisk, type FaultyDisk } from './disk-faults';

const mib = 1024 * 1024;
const retry = { baseMs: 10, maxMs: 40, maxAttempts: 3 };

describe.each(diskModes())('the agent on a model dir with disk faults (%s)', (mode) => {
  let h: AgentHarness | undefined;
  let disk: FaultyDisk | undefined;
  afterEach(async () => {
    disk?.close();
    await h?.close();
    disk = undefined;
    h = undefined;
  });

  /** The agent on a 4 MiB model dir, with `models` (name -> file:// URL of a 1 MiB model) configured. */
  const start = async (): Promise<{
    h: AgentHarness;
    disk: FaultyDisk;
    uri: (model: string) => Promise<string>;
  }> => {
    h = await startAgentHarness({
      retry,
      setup: (harness) => {
        disk = faultyDisk(mode, harness.modelDir, 4 * mib, 512 * 1024);
      },
    });
    const harness = h;
    const uri = (model: string): Promise<string> =>
      harness.localModel(`models/${model}`, { 'model.bin': model.padEnd(mib, '.') });
    return { h: harness, disk: disk!, uri };
  };
  /** Model-dir entries but the ballast: what the agent left. */
  const entries = async (agent: AgentHarness): Promise<string[]> =>
    (await agent.modelDirEntries()).filter((entry) => entry !== ballastName);
  const storageUris = async (agent: AgentHarness, model: string): Promise<string[]> =>
    (await agent.markers(model)).map((marker) => (marker.json as { storageUri: string }).storageUri);

  it('fails a model that does not fit (the disk check on a real full disk, ENOSPC where only writes fail), leaves nothing half-written, and loads it after a restart once space is freed', async () => {
    const { h, disk, uri } = await start();
    await disk.fill();
    h.write(modelsJson({ m1: await uri('m1') }));
    const failed = await h.waitForPhase('m1', 'Failed');
    if (mode === 'tmpfs') {
      // statfs sees the full disk: the 1 MiB model fails for good before a byte is written (the resync retries it).
      expect(failed).toMatchObject({
        errorKind: 'no-space',
        reason: expect.stringContaining('does not fit on the model volume') as unknown,
      });
      expect(h.phases('m1')).toEqual(['Downloading', 'Failed']);
    } else {
      expect(failed).toMatchObject({
        errorKind: 'filesystem',
        reason: expect.stringContaining('ENOSPC') as unknown,
      });
      expect(h.phases('m1')).toEqual([
        'Downloading',
        'Retrying',
        'Downloading',
        'Retrying',
        'Downloading',
        'Failed',
      ]);
    }
    expect(await entries(h)).toEqual([]);
    await disk.free();
    await h.restart();
    await h.waitForPhase('m1', 'Loaded');
    expect(h.standIn.loaded).toEqual(new Set(['m1']));
    expect(await storageUris(h, 'm1')).toEqual([await uri('m1')]);
  });

  it('keeps the loaded version serving when a new version does not fit, and swaps it in once space is freed', async () => {
    const { h, disk, uri } = await start();
    h.write(modelsJson({ m1: await uri('m1-v1') }));
    await h.waitForPhase('m1', 'Loaded');
    await disk.fill();
    h.write(modelsJson({ m1: await uri('m1-v2') }));
    await h.waitForPhase('m1', 'Failed');
    expect(h.standIn.loaded).toEqual(new Set(['m1']));
    expect(await storageUris(h, 'm1')).toEqual([await uri('m1-v1')]);
    expect(await entries(h)).toEqual(['m1']);
    await disk.free();
    await h.restart();
    await h.waitForPhase('m1', 'Loaded');
    await h.waitForIdle(); // the replaced version is deleted after Loaded is reported
    expect(await storageUris(h, 'm1')).toEqual([await uri('m1-v2')]);
    expect(await entries(h)).toEqual(['m1']);
  });

  it('fails new models with a clear permanent error on a read-only model dir, keeps serving the others, and survives a restart there', async () => {
    const { h, disk, uri } = await start();
    h.write(modelsJson({ m1: await uri('m1') }));
    await h.waitForPhase('m1', 'Loaded');
    await disk.readOnly();
    h.write(modelsJson({ m1: await uri('m1'), m2: await uri('m2') }));
    const failed = await h.waitForPhase('m2', 'Failed');
    expect(failed).toMatchObject({
      errorKind: 'filesystem',
      reason: expect.stringContaining('EROFS') as unknown,
    });
    expect(h.phases('m2')).toEqual(['Downloading', 'Failed']);
    await h.restart();
    await h.waitForPhase('m2', 'Failed');
    expect(h.standIn.loaded).toEqual(new Set(['m1']));
    expect(h.phases('m1')).toEqual([]); // in place: nothing to do for it
    await disk.writable();
    await h.restart();
    await h.waitForPhase('m2', 'Loaded');
    expect(h.standIn.loaded).toEqual(new Set(['m1', 'm2']));
  });
});
