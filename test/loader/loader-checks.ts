/** What the loader's tests on real edges share: harnesses closed after each test, idleness, per-model call order. */
import type { Loader } from '../../src/loader/loader';
import {
  createLoaderHarness,
  startLoaderHarness,
  type EdgeCall,
  type LoaderHarness,
  type LoaderHarnessOptions,
} from '../helpers/loader-harness';

/** Harness makers for a describe block; every harness they make is closed after each test. */
export const harnessesPerTest = (): {
  readonly started: (options?: LoaderHarnessOptions) => Promise<LoaderHarness>;
  readonly created: (options?: LoaderHarnessOptions) => Promise<LoaderHarness>;
} => {
  const harnesses: LoaderHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });
  const kept =
    (make: (options: LoaderHarnessOptions) => Promise<LoaderHarness>) =>
    async (options: LoaderHarnessOptions = {}): Promise<LoaderHarness> => {
      const h = await make(options);
      harnesses.push(h);
      return h;
    };
  return { started: kept(startLoaderHarness), created: kept(createLoaderHarness) };
};

/** True while the loader reports itself idle (read synchronously). */
export const isIdle = (loader: Loader): boolean => {
  let idle = false;
  loader.idle$.subscribe((value) => (idle = value)).unsubscribe();
  return idle;
};

/** Each model's top-level edge calls never overlap: every start is followed by its own end before the next. */
export const expectStrictlyInOrder = (calls: ReadonlyArray<EdgeCall>, model: string): void => {
  const own = calls.filter((c) => c.model === model && c.step !== 'download');
  expect(own.length % 2).toBe(0);
  for (let i = 0; i < own.length; i += 2) {
    const [start, end] = [own[i]!, own[i + 1]!];
    expect(start.at).toBe('start');
    expect([`${start.step}:end`, `${start.step}:fail`]).toContain(`${end.step}:${end.at}`);
  }
};
