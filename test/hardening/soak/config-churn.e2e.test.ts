/** Soak, quick version (in `npm test`): a few hundred seeded config swaps with flapping models; the agent converges. */
import { useTempDir } from '../../helpers/temp-dir';
import { killAllCli } from '../../helpers/cli-process';
import { runChurn } from './config-churn';

afterEach(killAllCli);
const tmp = useTempDir('churn');

describe('config churn, quick', () => {
  it('converges to the last of 300 random config updates with flapping models, rejected edits and failed loads', async () => {
    const result = await runChurn({
      root: tmp.path,
      updates: 300,
      seed: 7,
      modelCount: 20,
      versions: 3,
      rssEvery: 0,
    });
    expect(result.exit).toEqual({ code: 0, signal: null });
    expect([...result.loadedAtEnd].sort()).toEqual([...result.finalModels.keys()].sort());
    expect(result.rejected).toBeGreaterThan(0);
    expect(result.injectedFailures).toBeGreaterThan(0);
    expect(result.failedLines).toBe(0);
    // How many configs the agent acts on depends on how fast it reads them (swaps coalesce): only more than one.
    expect(result.loads).toBeGreaterThan(result.finalModels.size);
  });
});
