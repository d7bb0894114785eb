/** The store's staging steps as one call, for tests of the store that are not about the loader's order of steps. */
import type { ModelSpec } from '../../src/core/model-config';
import type { ModelName } from '../../src/core/model-name';
import type { Installed, ModelStore, WrittenFiles } from '../../src/ports';

/**
 * Stages `spec` of `name`, lets `fill` write it, then commits it (with the files `fill` says it wrote, as the loader
 * does), or abandons it with the fill's error.
 */
export const install = async (
  store: ModelStore,
  name: ModelName,
  spec: ModelSpec,
  fill: (dir: string, signal: AbortSignal) => Promise<WrittenFiles | void>,
  signal: AbortSignal,
): Promise<Installed> => {
  const staged = await store.stage(name, spec, signal);
  let written: WrittenFiles | void;
  try {
    written = await fill(staged.dir, signal);
  } catch (cause) {
    throw await staged.abandon(cause);
  }
  return staged.commit(undefined, written ?? undefined);
};
