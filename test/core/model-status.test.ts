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
});
