/** What the model servers' indexes yield: valid model names only, at most `serverIndexLimits.maxModels`. */
import { loadedModelNames, serverIndexLimits } from '../../src/model-server/server-options';
import { torchServeModelServer } from '../../src/model-server/torchserve';
import { v2ModelServer } from '../../src/model-server/v2';
import { startTorchServeStandIn } from '../../src/testing/torchserve-stand-in';
import { startV2ModelServer } from '../../src/testing/v2-model-server';

const live = (): AbortSignal => new AbortController().signal;
const notNames = ['../etc', '.tmp-x', 'a/b', ''];

describe('loadedModelNames', () => {
  it('keeps valid model names in order, skips the rest, and stops at the cap', () => {
    expect([...loadedModelNames(['b', ...notNames, 'a'])]).toEqual(['b', 'a']);
    const many = Array.from({ length: serverIndexLimits.maxModels + 5 }, (_, i) => `m${i}`);
    expect(loadedModelNames(many).size).toBe(serverIndexLimits.maxModels);
  });
});

describe('loadedModels of the model servers', () => {
  it('gives no name from the V2 index that is not a valid model name', async () => {
    const standIn = await startV2ModelServer();
    try {
      standIn.preload('good', ...notNames.filter((n) => n !== ''));
      expect([...(await v2ModelServer({ baseUrl: standIn.url }).loadedModels(live()))]).toEqual(['good']);
    } finally {
      await standIn.close();
    }
  });

  it('gives no name from the TorchServe list that is not a valid model name', async () => {
    const standIn = await startTorchServeStandIn();
    try {
      standIn.preload('good', '../etc', '.tmp-x');
      expect([...(await torchServeModelServer({ baseUrl: standIn.url }).loadedModels(live()))]).toEqual([
        'good',
      ]);
    } finally {
      await standIn.close();
    }
  });
});
