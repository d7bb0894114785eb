/**
 * The fuzz suite's properties of the config input (decodeConfig, the JSON scanners), as functions of the number of
 * runs: the quick suite runs them a few hundred times, the soak suite many thousand.
 */
import { either as E } from 'fp-ts';
import fc from 'fast-check';
import { decodeConfig } from '../../../src/core/decode-config';
import { maxJsonDepth, structureProblems } from '../../../src/core/json/json-structure';
import { jsonSyntaxError } from '../../../src/core/json/json-syntax';
import { snapshotEquals, specToJson, type Snapshot } from '../../../src/core/snapshot';

const file = '/fuzz/models.json';

/** decodeConfig, which must not throw: any throw fails the property with the input that caused it. */
const decoded = (text: string) => decodeConfig(file, text);

// Mostly valid values, so that whole lists decode often enough; now and then a hostile or wrong one.
const mostly = <T>(valid: fc.Arbitrary<T>, other: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: other });
const nameArb = mostly(
  fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,12}$/),
  fc.oneof(fc.constantFrom('ü', '..', '.x', 'a/b', '', 'x'.repeat(256)), fc.string({ maxLength: 6 })),
);
const uriArb = mostly(
  fc.oneof(fc.constantFrom('s3://b/1', 'gs://c/2', '/local/m', 'https://u:p@h/m?sig=x'), fc.webUrl()),
  fc.jsonValue({ maxDepth: 2 }),
);
const memoryArb = mostly(
  fc.oneof(fc.constantFrom('1Gi', '1024Mi', '0.5', '100M', '1e3', '+5k', ' 0', '\t1Gi\u00a0'), fc.nat()),
  fc.oneof(fc.constantFrom('lots', '', '1.5.5', -Infinity, NaN), fc.double(), fc.jsonValue({ maxDepth: 1 })),
);
const specArb = fc.record(
  {
    storageUri: uriArb,
    framework: mostly(fc.constantFrom('onnx', 'sklearn', 'pytorch'), fc.jsonValue({ maxDepth: 1 })),
    memory: memoryArb,
    extra: fc.jsonValue({ maxDepth: 3 }),
  },
  { requiredKeys: ['storageUri'] },
);
const entryArb = mostly(
  fc.record(
    { modelName: nameArb, modelSpec: specArb, note: fc.jsonValue({ maxDepth: 2 }) },
    { requiredKeys: ['modelName', 'modelSpec'] },
  ),
  fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record({ modelName: nameArb }),
    fc.record({ modelSpec: specArb }),
  ),
);
/** Anything JSON: mostly lists shaped like models.json (valid or nearly), sometimes any JSON value. */
export const configValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.array(entryArb, { maxLength: 12 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 6 }) },
);

/** The list a snapshot re-encodes to: what models.json would say for it. */
const encode = (snapshot: Snapshot): unknown[] =>
  [...snapshot].map(([modelName, spec]) => ({ modelName, modelSpec: specToJson(spec) }));

// The spaces Go's strings.TrimSpace removes, which KServe's Quantity.UnmarshalJSON trims from a quantity's text.
const aroundGoSpaces =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/**
 * What of a decoded entry the snapshot keeps: name, URI, framework, memory as text (without the spaces around it);
 * other fields dropped, and a `null` framework or memory too (read as absent, as KServe's Go decoder reads it).
 */
const kept = (entry: unknown): unknown => {
  const { modelName, modelSpec } = entry as { modelName: string; modelSpec: Record<string, unknown> };
  const { storageUri, framework, memory } = modelSpec;
  return {
    modelName,
    modelSpec: {
      storageUri,
      ...(framework !== undefined && framework !== null ? { framework } : {}),
      ...(memory !== undefined && memory !== null
        ? { memory: typeof memory === 'string' ? memory.replace(aroundGoSpaces, '') : JSON.stringify(memory) }
        : {}),
    },
  };
};

/** decodeConfig never throws on any JSON, and a Right re-encodes to the list it was decoded from. */
export const codecProperty = (numRuns: number): void =>
  fc.assert(
    fc.property(configValueArb, fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
      const result = decoded(JSON.stringify(value, null, indent));
      if (E.isLeft(result)) return;
      const list = encode(result.right);
      const written = JSON.parse(JSON.stringify(value)) as unknown[]; // NaN and ±Infinity are written null
      expect(list).toEqual(written.map(kept));
      const again = decoded(JSON.stringify(list));
      expect(E.isRight(again) && snapshotEquals(again.right, result.right)).toBe(true);
    }),
    { numRuns },
  );

/** A JSON text with one change: a character inserted, deleted or replaced somewhere. */
const mutatedJsonArb = fc
  .tuple(
    fc.json({ maxDepth: 4 }),
    fc.nat(),
    fc.constantFrom('insert', 'delete', 'replace'),
    fc.constantFrom(...'[]{},:"\\ 0-.eEtfn\u0000\u001f\uFEFF'),
  )
  .map(([text, at, how, char]) => {
    const i = at % (text.length + 1);
    if (how === 'insert') return text.slice(0, i) + char + text.slice(i);
    if (how === 'delete') return text.slice(0, i) + text.slice(i + 1);
    return text.slice(0, i) + char + text.slice(i + 1);
  });
/** Text that is JSON, nearly JSON, or anything. */
export const textArb: fc.Arbitrary<string> = fc.oneof(
  fc.json({ maxDepth: 5 }),
  mutatedJsonArb,
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...'[]{},:"\\ 01e-.tru'), maxLength: 30 }),
);

const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** jsonSyntaxError finds an error exactly when JSON.parse throws; decodeConfig never throws on any text. */
export const syntaxProperty = (numRuns: number): void =>
  fc.assert(
    fc.property(textArb, (text) => {
      expect(jsonSyntaxError(text) === undefined).toBe(parses(text));
      const result = decoded(text);
      if (!parses(text)) expect(E.isLeft(result) && result.left._tag).toBe('InvalidJson');
    }),
    { numRuns },
  );

/** A JSON tree whose objects may repeat keys (a small pool, some written with escapes), and its duplicates. */
interface Tree {
  readonly text: string;
  readonly duplicates: number;
}
const keyArb = fc.constantFrom('a', 'b', 'storageUri', 'a"b', 'é');
const escapes = (key: string, escaped: boolean): string =>
  escaped
    ? `"${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
    : JSON.stringify(key);
const treeArb: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.jsonValue({ maxDepth: 0 }).map((v) => ({ text: JSON.stringify(v), duplicates: 0 })),
    fc.array(tie('tree'), { maxLength: 4 }).map((items) => ({
      text: `[${items.map((i) => i.text).join(',')}]`,
      duplicates: items.reduce((sum, i) => sum + i.duplicates, 0),
    })),
    fc.array(fc.tuple(keyArb, fc.boolean(), tie('tree')), { maxLength: 5 }).map((members) => {
      const seen = new Set<string>();
      let duplicates = 0;
      for (const [key, , value] of members) {
        duplicates += value.duplicates + (seen.has(key) ? 1 : 0);
        seen.add(key);
      }
      const text = `{${members.map(([key, escaped, value]) => `${escapes(key, escaped)} : ${value.text}`).join(',')}}`;
      return { text, duplicates };
    }),
  ),
})).tree;

/** structureProblems counts every duplicate key, escaped or not, and none where there is none. */
export const duplicatesProperty = (numRuns: number): void =>
  fc.assert(
    fc.property(treeArb, fc.json({ maxDepth: 6 }), (tree, plain) => {
      expect(structureProblems(tree.text, 0).count).toBe(tree.duplicates);
      expect(structureProblems(plain).count).toBe(0);
    }),
    { numRuns },
  );

/** Nesting of any depth, arrays and objects mixed at random, never throws; past maxJsonDepth it is refused. */
export const depthProperty = (numRuns: number, maxDepth: number): void =>
  fc.assert(
    fc.property(fc.integer({ min: 1, max: maxDepth }), fc.integer(), fc.boolean(), (depth, seed, inSpec) => {
      let opens = '';
      let closes = '';
      for (let level = 0; level < depth; level++) {
        const object = ((seed >>> (level % 31)) & 1) === 1;
        opens += object ? '{"a":' : '[';
        closes = (object ? '}' : ']') + closes;
      }
      const nested = `${opens}1${closes}`;
      const text = inSpec
        ? `[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","x":${nested}}}]`
        : nested;
      const result = decoded(text);
      const levels = depth + (inSpec ? 3 : 0);
      expect(E.isLeft(result)).toBe(levels > maxJsonDepth || !inSpec);
      if (levels > maxJsonDepth)
        expect(JSON.stringify(result)).toContain(`nested deeper than ${maxJsonDepth} levels`);
    }),
    { numRuns },
  );

/** Lists of up to `maxModels` entries, one of them maybe bad: decoded whole, or refused naming that entry. */
export const sizeProperty = (numRuns: number, maxModels: number): void =>
  fc.assert(
    fc.property(fc.integer({ min: 0, max: maxModels }), fc.option(fc.nat()), (count, bad) => {
      const badIndex = bad === null || count === 0 ? -1 : bad % count;
      const entries = Array.from({ length: count }, (_, i) =>
        i === badIndex
          ? `{"modelName":"m${i}","modelSpec":{"storageUri":"s3://b/${i}","memory":[]}}`
          : `{"modelName":"m${i}","modelSpec":{"storageUri":"s3://b/${i}","memory":"${i}Mi"}}`,
      );
      const result = decoded(`[${entries.join(',')}]`);
      if (badIndex === -1) expect(E.isRight(result) && result.right.size).toBe(count);
      else
        expect(JSON.stringify(result)).toContain(
          `[${badIndex}].modelSpec.memory: expected a Kubernetes quantity`,
        );
    }),
    { numRuns },
  );

/** How many times (and how big) each property runs. */
export interface ConfigFuzzRuns {
  readonly codec: number;
  readonly syntax: number;
  readonly duplicates: number;
  readonly depth: { readonly runs: number; readonly maxDepth: number };
  readonly size: { readonly runs: number; readonly maxModels: number };
}

/** The config-input fuzz tests, run `runs` times each (the quick suite and the soak suite differ only there). */
export const configFuzzTests = (runs: ConfigFuzzRuns): void => {
  it('decodeConfig never throws on any JSON, and a Right re-encodes to the list it came from', () => {
    codecProperty(runs.codec);
  });

  it('finds a syntax error exactly where JSON.parse throws, and decodeConfig never throws on any text', () => {
    syntaxProperty(runs.syntax);
  });

  it('counts every duplicate key, escaped or not, and none in JSON without them', () => {
    duplicatesProperty(runs.duplicates);
  });

  it(`refuses nesting deeper than the limit, up to ${runs.depth.maxDepth} levels, without throwing`, () => {
    depthProperty(runs.depth.runs, runs.depth.maxDepth);
  });

  it(`decodes lists of up to ${runs.size.maxModels} models, or names the one bad entry`, () => {
    sizeProperty(runs.size.runs, runs.size.maxModels);
  });
};
