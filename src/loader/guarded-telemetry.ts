/** guardedTelemetry: an integrator's telemetry that never throws into the agent. */
import type { Logger } from 'pino';
import type { Telemetry } from '../ports';

/** `method` of `telemetry`, bound, with a throw from it logged as a defect instead of thrown. */
const guarded =
  <A extends unknown[]>(what: string, method: (...args: A) => void, log: Logger) =>
  (...args: A): void => {
    try {
      method(...args);
    } catch (err) {
      log.error({ err }, `the ${what} telemetry threw: a defect; going on`);
    }
  };

/** The telemetries guardedTelemetry made. */
const guardedOnes = new WeakSet<Telemetry>();

/**
 * `telemetry` (an integrator's: the port says its methods never throw) whose every method logs a throw as a defect,
 * one error line each, and goes on. Thrown inside an operator, it ended the config pipeline, the resyncs, or the agent
 * with them; thrown in a model's work, it failed the model.
 */
export const guardedTelemetry = (telemetry: Telemetry, log: Logger): Telemetry => {
  // startAgent guards the integrator's telemetry and hands it on to syncModels, which guards what it is given (it
  // is exported too): a telemetry guarded once is not wrapped again.
  if (guardedOnes.has(telemetry)) return telemetry;
  const guardedOne: Telemetry = {
    configRead: guarded('config read', telemetry.configRead.bind(telemetry), log),
    resyncRun: guarded('resync run', telemetry.resyncRun.bind(telemetry), log),
    repair: guarded('repair', telemetry.repair.bind(telemetry), log),
    retry: guarded('retry', telemetry.retry.bind(telemetry), log),
    watcherAlive: guarded('watcher alive', telemetry.watcherAlive.bind(telemetry), log),
    ...(telemetry.repairsDeferred === undefined
      ? {}
      : { repairsDeferred: guarded('repairs deferred', telemetry.repairsDeferred.bind(telemetry), log) }),
    ...(telemetry.nodeCache === undefined
      ? {}
      : { nodeCache: guarded('node cache', telemetry.nodeCache.bind(telemetry), log) }),
  };
  guardedOnes.add(guardedOne);
  return guardedOne;
};
