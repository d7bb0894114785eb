/** How a start fails for good: the model server never answered (`--once`), or the model dir cannot be used. */
import type { EffectError } from '../core/errors';

/** The model server gave no answer within `AgentSettings.serverWaitMs`; `lastError` is why its last try failed. */
export class ServerNotAnswering extends Error {
  constructor(
    readonly waitedMs: number,
    readonly lastError: EffectError,
  ) {
    super(`the model server did not answer within ${waitedMs} ms: ${lastError.message}`);
    this.name = 'ServerNotAnswering';
  }
}

/**
 * The start's recovery of the model dir or its load journal failed for good (not a dir, a dangling link, not
 * listable; `--once`: still not answering at `serverWaitMs`): a bad setting or a broken volume, not a bug.
 */
export class ModelDirUnusable extends Error {
  constructor(readonly failure: EffectError) {
    super(`the model dir cannot be used: ${failure.message}`);
    this.name = 'ModelDirUnusable';
  }
}
