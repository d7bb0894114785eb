/** Chaos, quick: the real agent killed with SIGKILL at seeded random moments of a 100-model sync with mixed adds, changes and removes (4 rounds; 20 in chaos.soak.test.ts). */
import { useTempDir } from '../../helpers/temp-dir';
import { runChaos } from './chaos-run';
import { useCrashWorlds } from './crash-kit';

const tmp = useTempDir('chaos');
const { keep } = useCrashWorlds();

describe('the agent process under kill -9 while its config changes', () => {
  it('converges to the config, never loads an incomplete or wrong version and re-downloads nothing complete, over 4 killed runs', async () => {
    await runChaos({ seed: 0x6368616f, rounds: 4, models: 100, root: tmp.path, keep });
  }, 240_000);
});
