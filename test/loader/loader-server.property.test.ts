/**
 * A property test of the loader against a simulated model server on virtual time: whatever the loads answer (an
 * error, no answer though the server loaded the files, no answer and nothing done) and whatever specs come in
 * between, once the faults stop and a resync has re-submitted the config, every listed model is Loaded with its
 * spec and the server holds exactly those files; every removed one is gone from the server.
 */
import fc from 'fast-check';
import pino from 'pino';
import { Subject, VirtualTimeScheduler } from 'rxjs';
import { permanentError, retryableError } from '../../src/core/errors';
import type { ModelSpec } from '../../src/core/model-config';
import { add, remove, type ModelOp } from '../../src/core/model-op';
import { createLoader } from '../../src/loader/loader';
import type { LoadJournal, ModelServer, ModelStore } from '../../src/ports';
import { name, spec } from '../helpers/fixtures';
import { advance } from './virtual-time';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const specs = [spec('/a'), spec('/b'), spec('/c')];

/** How one load call goes: done, refused (retryable or for good), or no answer with the files loaded or not. */
type Outcome = 'ok' | 'fail' | 'refused' | 'no-answer-loaded' | 'no-answer';
const outcomeArb = fc.constantFrom<Outcome>('ok', 'fail', 'refused', 'no-answer-loaded', 'no-answer');

/**
 * The server (name → the spec whose files it loaded) and the model dir (name → spec installed). A V2 server keeps
 * the old version when a reload fails; TorchServe unregisters it first, and takes a register of a name it has as
 * done (409) whatever files it holds.
 */
const world = (outcomes: Outcome[], torchServe: boolean) => {
  const disk = new Map<string, ModelSpec>();
  const server = new Map<string, ModelSpec>();
  const store = {
    recover: () => Promise.resolve(new Map()),
    stage: (model: string, target: ModelSpec) =>
      Promise.resolve({
        dir: '/staging',
        filling: <T>(signal: AbortSignal, fill: (signal: AbortSignal) => Promise<T>) => fill(signal),
        commit: async (beforeSwap?: Promise<unknown>) => {
          await beforeSwap;
          disk.set(model, target);
          return { dropReplaced: () => Promise.resolve() };
        },
        abandon: (cause: unknown) => Promise.resolve(cause),
      }),
    remove: (model: string) => Promise.resolve(void disk.delete(model)),
    isInstalled: (model: string, target: ModelSpec) => Promise.resolve(disk.get(model) === target),
    fillFrom: () => Promise.resolve(undefined),
  } as unknown as ModelStore;
  const journal = {
    starting: () => Promise.resolve(),
    confirmed: () => Promise.resolve(),
    unconfirmed: () => Promise.resolve(new Set()),
  } as unknown as LoadJournal;
  const modelServer: ModelServer = {
    load: (model, replacing) => {
      const outcome = outcomes.shift() ?? 'ok';
      if (torchServe && replacing) server.delete(model);
      else if (torchServe && server.has(model))
        return outcome === 'ok'
          ? Promise.resolve()
          : Promise.reject(retryableError('http-status', 'HTTP 500'));
      const files = disk.get(model)!;
      switch (outcome) {
        case 'ok':
          server.set(model, files);
          return Promise.resolve();
        case 'fail':
          return Promise.reject(retryableError('http-status', 'HTTP 500'));
        case 'refused':
          return Promise.reject(permanentError('http-status', 'HTTP 400'));
        case 'no-answer-loaded':
          server.set(model, files);
          return Promise.reject(retryableError('timeout', 'timed out'));
        case 'no-answer':
          return Promise.reject(retryableError('timeout', 'timed out'));
      }
    },
    unload: (model) => Promise.resolve(void server.delete(model)),
    loadedModels: () => Promise.resolve(new Set(server.keys())),
  };
  return { disk, server, store, journal, modelServer };
};

describe('the loader against a simulated server', () => {
  it('leaves every model Loaded with the files the server holds, whatever the loads answered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            model: fc.constantFrom('m1', 'm2'),
            spec: fc.option(fc.constantFrom(0, 1, 2)),
            waitMs: fc.constantFrom(0, 0, 500, 3000),
          }),
          { maxLength: 12 },
        ),
        fc.array(outcomeArb, { maxLength: 30 }),
        fc.boolean(),
        async (steps, drawnOutcomes, torchServe) => {
          const outcomes = [...drawnOutcomes];
          const w = world(outcomes, torchServe);
          const scheduler = new VirtualTimeScheduler();
          const loader = createLoader(
            {
              store: w.store,
              journal: w.journal,
              server: w.modelServer,
              download: () => Promise.resolve(),
              log: pino({ level: 'silent' }),
              downloadConcurrency: 1,
              loadConcurrency: 1,
              retry: { baseMs: 1000, maxMs: 4000, maxAttempts: 3 },
              random: () => 1,
              scheduler,
            },
            { onDisk: new Map(), loaded: new Set() },
          );
          const ops$ = new Subject<ModelOp>();
          const subscription = loader.run(ops$).subscribe();
          const desired = new Map<string, ModelSpec | undefined>();
          const submit = (model: string, target: ModelSpec | undefined): void =>
            ops$.next(target === undefined ? remove(name(model)) : add(name(model), target));
          const pass = async (ms: number, times: number): Promise<void> => {
            for (let i = 0; i < times; i++) {
              advance(scheduler, ms);
              await settle();
            }
          };
          for (const step of steps) {
            const target = step.spec === null ? undefined : specs[step.spec];
            desired.set(step.model, target);
            submit(step.model, target);
            await settle();
            await pass(step.waitMs, 1);
          }
          await pass(5000, 20);
          // The faults are over; resyncs note what the server lost and re-submit the config (Failed ones retried).
          outcomes.length = 0;
          for (let resync = 0; resync < 3; resync++) {
            for (const [model, target] of desired) {
              const state = loader.desiredStates().find((s) => s.name === model);
              if (state?.phase === 'Loaded' && state.settled && !w.server.has(model))
                loader.noteServerIndex(name(model), false);
              submit(model, target);
            }
            await pass(5000, 10);
          }
          for (const [model, target] of desired) {
            const status = loader.statuses().get(name(model));
            if (target !== undefined)
              expect([model, status?.phase, status?.spec]).toEqual([model, 'Loaded', target]);
            expect([model, w.server.get(model)]).toEqual([model, target]);
          }
          subscription.unsubscribe();
        },
      ),
      { numRuns: 300 },
    );
  });
});
