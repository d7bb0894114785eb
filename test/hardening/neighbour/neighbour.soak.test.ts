/** The neighbour acting at random moments, at length: 40 rounds for each of three seeds. */
import { useNeighbourhoods } from './neighbourhood';
import { runRandomNeighbour } from './random-neighbour';

const { neighbourhood } = useNeighbourhoods();

describe('the model dir against a neighbour acting at random moments, at length', () => {
  it.each([0x6e310001, 0x6e310002, 0x6e310003])(
    'keeps everything outside intact and converges once the neighbour stops, over 40 rounds (seed %i)',
    async (seed) => {
      await runRandomNeighbour(neighbourhood, { seed, rounds: 40 });
    },
    600_000,
  );
});
