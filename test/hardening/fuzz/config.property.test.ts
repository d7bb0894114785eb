/** Fuzz, quick: decodeConfig and the JSON scanners on arbitrary, nearly valid, deep and large input. */
import { configFuzzTests } from './config-properties';

describe('config input (fuzz)', () =>
  configFuzzTests({
    codec: 400,
    syntax: 1500,
    duplicates: 1000,
    depth: { runs: 40, maxDepth: 200_000 },
    size: { runs: 20, maxModels: 20_000 },
  }));
