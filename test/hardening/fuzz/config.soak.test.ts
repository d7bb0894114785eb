/** Fuzz, long (`npm run test:soak`): the properties of config.property.test.ts, fifty times as often and larger. */
import { configFuzzTests } from './config-properties';

jest.setTimeout(600_000);

describe('config input (fuzz, soak)', () =>
  configFuzzTests({
    codec: 20_000,
    syntax: 75_000,
    duplicates: 50_000,
    depth: { runs: 60, maxDepth: 2_000_000 },
    size: { runs: 40, maxModels: 150_000 },
  }));
