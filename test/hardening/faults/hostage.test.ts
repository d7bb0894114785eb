/**
 * A lying or stuck model server cannot hold real work hostage: unloads of models it invents, hanging for good,
 * never take the workers or load slots a configured model's load needs, and names no config could list get no
 * request at all.
 */
import { unlistedUnloadWorkers } from '../../../src/loader/loader';
import { useAgentHarness } from '../../helpers/agent-harness';
import { modelsJson } from '../../helpers/fixtures';

const start = useAgentHarness();

const invented = Array.from({ length: 40 }, (_, i) => `ghost-${String(i).padStart(2, '0')}`);

describe('agent against a server listing invented models whose unloads hang', () => {
  it('loads the configured model while the unloads of the invented ones hang, two at a time', async () => {
    const h = await start({
      setup: async (h) => {
        h.standIn.preload(...invented, '.tmp-half');
        h.standIn.injectFault('unload', { hang: true }, Infinity);
        h.write(modelsJson({ wanted: await h.localModel('wanted', { 'model.pt': 'w' }) }));
      },
    });
    await h.waitForPhase('wanted', 'Loaded', 10_000);
    expect(h.loadsOf('wanted')).toEqual([{ name: 'wanted', complete: true, status: 200 }]);
    const unloaded = h.unloadRequests().map((request) => request.name);
    expect(unloaded.length).toBeLessThanOrEqual(unlistedUnloadWorkers);
    expect(unloaded.every((name) => invented.includes(name!))).toBe(true);
  });

  it('still unloads, before anything else, a model modelsync installed that the config no longer lists', async () => {
    const h = await start({
      setup: async (h) => {
        h.write(modelsJson({ old: await h.localModel('old', { 'model.pt': 'o' }) }));
      },
    });
    await h.waitForReady();
    h.write(modelsJson({ next: await h.localModel('next', { 'model.pt': 'n' }) }));
    await h.waitForPhase('next', 'Loaded', 10_000);
    const order = h.standIn.requests
      .filter((request) => request.name === 'old' || request.name === 'next')
      .map((request) => `${request.path.split('/').pop()!} ${request.name!}`);
    expect(order.slice(-2)).toEqual(['unload old', 'load next']);
  });
});
