/** Chaos, long: the real agent killed with SIGKILL at seeded random moments of a 100-model sync with mixed adds, changes and removes, 20 rounds per seed. */
import { useTempDir } from '../../helpers/temp-dir';
import { runChaos } from './chaos-run';
import { useCrashWorlds } from './crash-kit';

const tmp = useTempDir('chaos-soak');
const { keep } = useCrashWorlds();

describe('the agent process under kill -9 while its config changes, at length', () => {
  it.each([0x73306b31, 0x73306b32])(
    'converges to the config, never loads an incomplete or wrong version and re-downloads nothing complete, over 20 killed runs (seed %i)',
    async (seed) => {
      await runChaos({ seed, rounds: 20, models: 100, root: tmp.path, keep });
    },
    900_000,
  );
});
