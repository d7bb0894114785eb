/** The neighbour suite's world: a loader harness whose stand-in checks each load against a manifest, a sentinel dir outside the model dir, and the checks of the promise. */
import { join } from 'node:path';
import type { ModelSpec } from '../../../src/core/model-config';
import { manifestOf, type ModelManifest } from '../../../src/testing/model-manifest';
import { spec } from '../../helpers/fixtures';
import { atLevel } from '../../helpers/log-sink';
import type { EdgeCall, LoaderHarness, LoaderHarnessOptions } from '../../helpers/loader-harness';
import { harnessesPerTest } from '../../loader/loader-checks';
import { makeSentinel, type Sentinel } from './sentinel';

/** The promise, checked at the end of every test: outside untouched, no load of anything incomplete or foreign. */
export const expectPromiseKept = async (h: LoaderHarness, outside: Sentinel): Promise<void> => {
  await outside.expectUntouched();
  const accepted = h.standIn.loads.filter((load) => load.status === 200);
  expect(accepted.filter((load) => !load.complete || load.problem !== undefined)).toEqual([]);
};

/** The warns of the model dir and its journal: one per thing refused or repaired. */
export const warnings = (h: LoaderHarness): string[] =>
  h.sink.lines
    .filter(
      (line) => atLevel('warn')(line) && ['model-dir', 'load-journal'].includes(String(line['component'])),
    )
    .map((line) => line.msg);

/** A harness with a model source maker and a sentinel dir outside, as the neighbour suite's tests need. */
export interface Neighbourhood {
  readonly h: LoaderHarness;
  readonly outside: Sentinel;
  /** A local model source whose files the stand-in will demand, and its spec. */
  readonly model: (model: string, content?: string) => Promise<ModelSpec>;
}

/** For a test file: makers of neighbourhoods, whose harnesses are closed after each test. */
export const useNeighbourhoods = (): {
  neighbourhood: (options?: LoaderHarnessOptions) => Promise<Neighbourhood>;
  plantedAt: (
    when: (call: EdgeCall) => boolean,
    plant: (h: LoaderHarness, outside: Sentinel) => Promise<void>,
    options?: LoaderHarnessOptions,
  ) => Promise<Neighbourhood>;
} => {
  const { created } = harnessesPerTest();
  /** A harness whose stand-in checks every load against the manifest of the sources made with `source`. */
  const neighbourhood = async (options: LoaderHarnessOptions = {}): Promise<Neighbourhood> => {
    const manifests = new Map<string, ModelManifest>();
    let sources = 0;
    const h = await created({ ...options, manifest: (version) => manifests.get(version) });
    const outside = await makeSentinel(join(h.root, 'outside'));
    /** A local model source whose files the stand-in will demand, and its spec. */
    const model = async (model: string, content = `weights of ${model}`): Promise<ModelSpec> => {
      const uri = await h.source(`${model}-${(sources += 1)}`, content);
      manifests.set(uri, manifestOf(new Map([['model.bin', content]])));
      return spec(uri, '10Mi');
    };
    return { h, outside, model };
  };

  /** A neighbourhood whose neighbour runs `plant` once, at the first edge call `when` matches (before that call runs). */
  const plantedAt = async (
    when: (call: EdgeCall) => boolean,
    plant: (h: LoaderHarness, outside: Sentinel) => Promise<void>,
    options: LoaderHarnessOptions = {},
  ): Promise<Neighbourhood> => {
    let armed = true;
    const world = await neighbourhood({
      ...options,
      onCall: async (call) => {
        if (!armed || !when(call)) return;
        armed = false;
        await plant(world.h, world.outside);
      },
    });
    return world;
  };
  return { neighbourhood, plantedAt };
};
