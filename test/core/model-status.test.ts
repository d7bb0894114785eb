/** Tests of nextStatus: what a status keeps from the one before it. */
import { nextStatus, type ModelStatus } from '../../src/core/model-status';
import { name } from '../helpers/fixtures';

const spec = { storageUri: 's3://b/m', framework: 'onnx' };
const start: ModelStatus = { modelName: name('m'), phase: 'Downloading', spec, since: 0, bytesDownloaded: 7 };

describe('nextStatus', () => {
  it('keeps where the files came from and the download figures while the spec loads, and drops them at the next download', () => {
    const loading = nextStatus(start, 'Loading', spec, { filesFrom: 'node-cache' }, 10);
    const loaded = nextStatus(loading, 'Loaded', spec, {}, 25);
    expect(loaded).toEqual({
      modelName: 'm',
      phase: 'Loaded',
      spec,
      since: 25,
      durationMs: 15,
      bytesDownloaded: 7,
      bytesTotal: undefined,
      filesFrom: 'node-cache',
    });
    const again = nextStatus(loaded, 'Downloading', spec, {}, 30);
    expect(again.filesFrom).toBeUndefined();
    expect(again.bytesDownloaded).toBeUndefined();
  });

  it('drops the download figures of one spec when another spec is reported next (a change back during a download)', () => {
    const other = { storageUri: 's3://b/m2' };
    const downloading: ModelStatus = { ...start, spec: other, bytesDownloaded: 100, bytesTotal: 23000 };
    const loaded = nextStatus(downloading, 'Loaded', spec, {}, 40);
    expect(loaded.bytesDownloaded).toBeUndefined();
    expect(loaded.bytesTotal).toBeUndefined();
    const loading = nextStatus({ ...downloading, filesFrom: 'storage' }, 'Loading', spec, {}, 40);
    expect(loading.filesFrom).toBeUndefined();
    const failed = nextStatus(downloading, 'Failed', { ...other, framework: 'onnx' }, {}, 40);
    expect(failed.bytesDownloaded).toBeUndefined();
    expect(nextStatus(downloading, 'Retrying', { ...other }, {}, 40).bytesDownloaded).toBe(100);
  });
});
