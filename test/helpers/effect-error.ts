/** effectError: the EffectError a promise rejects with, for tests of edges that must fail with one. */
import { EffectError } from '../../src/core/errors';

/** The EffectError `promise` rejects with (fails the test when it resolves or rejects with something else). */
export const effectError = async (promise: Promise<unknown>): Promise<EffectError> => {
  const outcome = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(outcome instanceof EffectError)) throw new Error(`expected an EffectError, got ${String(outcome)}`);
  return outcome;
};
