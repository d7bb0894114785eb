/** Tests of the SUCCESS marker content, identity and decoding. */
import { either as E } from 'fp-ts';
import fc from 'fast-check';
import {
  decodeMarker,
  manifestDirs,
  manifestMismatch,
  markerJson,
  markerPrefix,
  specIdentityJson,
  type MarkerContent,
} from '../../src/core/marker';
import type { ModelSpec } from '../../src/core/model-config';
import { parseQuantity } from '../../src/core/quantity';
import { specEquals, specToJson } from '../../src/core/snapshot';
import { spec } from '../helpers/fixtures';

/** The spec as a marker stores it: KServe's JSON (keys storageUri, framework, memory; memory as written). */
const canonicalSpecJson = (content: ModelSpec): string => JSON.stringify(specToJson(content));

describe('markerPrefix', () => {
  it('is the KServe marker prefix', () => {
    expect(markerPrefix).toBe('SUCCESS.');
  });
});

describe('canonicalSpecJson', () => {
  it('writes storageUri, framework and memory in that order with memory as written', () => {
    expect(canonicalSpecJson(spec('s3://models/model1', '100Mi'))).toBe(
      '{"storageUri":"s3://models/model1","framework":"sklearn","memory":"100Mi"}',
    );
  });

  it('omits unset fields', () => {
    expect(canonicalSpecJson({ storageUri: 'gs://b/m' })).toBe('{"storageUri":"gs://b/m"}');
  });

  it('writes the same text for a spec built in another key order', () => {
    const memory = parseQuantity('1Gi')!;
    const reordered: ModelSpec = { memory, framework: 'onnx', storageUri: 'gs://b/m' };
    expect(canonicalSpecJson(reordered)).toBe('{"storageUri":"gs://b/m","framework":"onnx","memory":"1Gi"}');
  });
});

describe('specIdentityJson', () => {
  it.each([
    ['1Gi and 1024Mi', spec('s3://b/m', '1Gi'), spec('s3://b/m', '1024Mi')],
    ['unset memory and "0"', spec('s3://b/m'), spec('s3://b/m', '0')],
    ['unset framework and ""', { storageUri: 's3://b/m' }, { storageUri: 's3://b/m', framework: '' }],
  ])('is the same for %s', (_, a, b) => {
    expect(specIdentityJson(a)).toBe(specIdentityJson(b));
  });

  it.each([
    ['storageUri', spec('s3://b/m1', '1Gi'), spec('s3://b/m2', '1Gi')],
    ['framework', spec('s3://b/m', '1Gi', 'sklearn'), spec('s3://b/m', '1Gi', 'xgboost')],
    ['memory', spec('s3://b/m', '1Gi'), spec('s3://b/m', '1G')],
    ['selection', spec('s3://b/m'), { ...spec('s3://b/m'), selection: { allowPatterns: ['*.json'] } }],
    [
      'kind of pattern',
      { ...spec('s3://b/m'), selection: { allowPatterns: ['*.json'] } },
      { ...spec('s3://b/m'), selection: { ignorePatterns: ['*.json'] } },
    ],
  ])('differs when the %s differs', (_, a, b) => {
    expect(specIdentityJson(a)).not.toBe(specIdentityJson(b));
  });

  it('is what it was before patterns existed for a spec without any, so installed models keep their marker', () => {
    expect(specIdentityJson({ ...spec('s3://b/m', '1Gi'), selection: { allowPatterns: [] } })).toBe(
      '["s3://b/m","sklearn","1073741824/1"]',
    );
  });

  it('is equal exactly when specEquals holds', () => {
    const quantities = ['0', '1Gi', '1024Mi', '1G', '1000M', '0.5', '500m'];
    const arbSpec = fc.record({
      storageUri: fc.constantFrom('s3://b/a', 's3://b/b', 'a","b'),
      framework: fc.option(fc.constantFrom('', 'sklearn', 'onnx'), { nil: undefined }),
      memory: fc.option(fc.constantFrom(...quantities), { nil: undefined }),
      allow: fc.option(fc.constantFrom([], ['*.json'], ['*.json', 'a"b']), { nil: undefined }),
      ignore: fc.option(fc.constantFrom([], ['*.json']), { nil: undefined }),
    });
    const toSpec = (r: {
      storageUri: string;
      framework: string | undefined;
      memory: string | undefined;
      allow: ReadonlyArray<string> | undefined;
      ignore: ReadonlyArray<string> | undefined;
    }) =>
      ({
        storageUri: r.storageUri,
        ...(r.framework !== undefined ? { framework: r.framework } : {}),
        ...(r.memory !== undefined ? { memory: parseQuantity(r.memory)! } : {}),
        ...(r.allow !== undefined || r.ignore !== undefined
          ? {
              selection: {
                ...(r.allow !== undefined ? { allowPatterns: r.allow } : {}),
                ...(r.ignore !== undefined ? { ignorePatterns: r.ignore } : {}),
              },
            }
          : {}),
      }) as ModelSpec;
    fc.assert(
      fc.property(arbSpec, arbSpec, (a, b) => {
        const [x, y] = [toSpec(a), toSpec(b)];
        expect(specIdentityJson(x) === specIdentityJson(y)).toBe(specEquals(x, y));
      }),
    );
  });
});

describe('decodeMarker', () => {
  it('decodes a KServe marker', () => {
    const decoded = decodeMarker(
      '{"storageUri":"s3://models/model1","framework":"sklearn","memory":"100Mi"}',
    );
    expect(E.map((content: MarkerContent) => specToJson(content.spec))(decoded)).toEqual(
      E.right({ storageUri: 's3://models/model1', framework: 'sklearn', memory: '100Mi' }),
    );
  });

  it('decodes what canonicalSpecJson writes back to an equal spec', () => {
    const original = spec('https://h/m.joblib', '2Gi', 'sklearn');
    const decoded = decodeMarker(canonicalSpecJson(original));
    expect(E.isRight(decoded) && specEquals(decoded.right.spec, original)).toBe(true);
    expect(E.map((content: MarkerContent) => canonicalSpecJson(content.spec))(decoded)).toEqual(
      E.right(canonicalSpecJson(original)),
    );
    expect(E.isRight(decoded) && decoded.right.files).toBeUndefined();
  });

  it('decodes the patterns markerJson writes back into an equal spec', () => {
    const original: ModelSpec = {
      ...spec('s3://b/m', '1Gi'),
      selection: { allowPatterns: ['*.json', 'tokenizer*'], ignorePatterns: ['config.json'] },
    };
    const decoded = decodeMarker(markerJson(original, new Map([['tokenizer.json', 3]])));
    expect(E.isRight(decoded) && decoded.right.spec.selection).toEqual(original.selection);
    expect(E.isRight(decoded) && specEquals(decoded.right.spec, original)).toBe(true);
  });

  it('decodes a KServe marker of a spec without memory ("0")', () => {
    const decoded = decodeMarker('{"storageUri":"s3://m","framework":"","memory":"0"}');
    expect(E.isRight(decoded) && specEquals(decoded.right.spec, { storageUri: 's3://m' })).toBe(true);
  });

  it.each([
    ['truncated JSON (W0)', '{', 'not JSON'],
    ['an empty file', '', 'empty'],
    ['whitespace', ' \n', 'empty'],
    ['JSON without storageUri', '{"framework":"sklearn"}', 'storageUri'],
    ['a bad memory quantity', '{"storageUri":"s3://m","memory":"lots"}', 'memory'],
    ['a JSON array', '[]', 'ModelSpec'],
    ['null', 'null', 'ModelSpec'],
    ['a manifest that is no object', '{"storageUri":"s3://m","modelsyncFiles":[]}', 'modelsyncFiles'],
    [
      'a manifest path leaving the dir',
      '{"storageUri":"s3://m","modelsyncFiles":{"../x":1}}',
      'no relative path',
    ],
    [
      'an absolute manifest path',
      '{"storageUri":"s3://m","modelsyncFiles":{"/etc/x":1}}',
      'no relative path',
    ],
    ['a negative size', '{"storageUri":"s3://m","modelsyncFiles":{"a":-1}}', 'size in bytes'],
    ['a fractional size', '{"storageUri":"s3://m","modelsyncFiles":{"a":1.5}}', 'size in bytes'],
    ['a size as text', '{"storageUri":"s3://m","modelsyncFiles":{"a":"1"}}', 'size in bytes'],
  ])('returns why when the marker holds %s', (_, text, reason) => {
    const decoded = decodeMarker(text);
    expect(E.isLeft(decoded)).toBe(true);
    expect(E.isLeft(decoded) && decoded.left).toContain(reason);
  });
});

describe('markerJson', () => {
  const files = new Map([
    ['b/model.onnx', 2048],
    ['config.pbtxt', 12],
  ]);

  it('writes the spec as KServe does, with the manifest sorted by path under its own key', () => {
    expect(markerJson(spec('s3://models/m1', '1Gi', 'onnx'), files)).toBe(
      '{"storageUri":"s3://models/m1","framework":"onnx","memory":"1Gi",' +
        '"modelsyncFiles":{"b/model.onnx":2048,"config.pbtxt":12}}',
    );
  });

  it('decodes back to the spec and the manifest', () => {
    const decoded = decodeMarker(markerJson(spec('s3://models/m1', '1Gi'), files));
    expect(E.isRight(decoded) && specEquals(decoded.right.spec, spec('s3://models/m1', '1Gi'))).toBe(true);
    expect(E.isRight(decoded) && decoded.right.files).toEqual(files);
  });
});

describe('manifestMismatch', () => {
  const expected = new Map([
    ['a', 10],
    ['d/b', 20],
  ]);

  it.each([
    [
      'every file there with its size',
      [
        ['a', 10],
        ['d/b', 20],
      ],
      undefined,
    ],
    [
      'an extra file the model server added',
      [
        ['a', 10],
        ['d/b', 20],
        ['cache', 5],
      ],
      undefined,
    ],
    [
      'a file cut short',
      [
        ['a', 10],
        ['d/b', 0],
      ],
      'd/b has 0 bytes, the marker says 20',
    ],
    ['a file missing', [['a', 10]], 'd/b is missing'],
    [
      'a file grown',
      [
        ['a', 11],
        ['d/b', 20],
      ],
      'a has 11 bytes, the marker says 10',
    ],
  ] as const)('%s', (_, found, reason) => {
    expect(manifestMismatch(expected, new Map(found))).toBe(reason);
  });
});

describe('manifestDirs', () => {
  it('holds every dir above each file, the top among them', () => {
    expect(
      [
        ...manifestDirs(
          new Map([
            ['a/b/c.bin', 1],
            ['a/d.bin', 1],
            ['e.bin', 1],
          ]),
        ),
      ].sort(),
    ).toEqual(['', 'a', 'a/b']);
  });

  it('takes each dir above 10,000 files 1,000 dirs deep once, not once per file below it', () => {
    // A manifest's files may lie 1,000 dirs deep (a 4 KiB entry name): each file walked its every dir above anew,
    // about 30 s of a fill from another model dir with the event loop held.
    const deep = Array.from({ length: 1000 }, (_, i) => `${i % 10}`).join('/');
    const files = new Map(Array.from({ length: 10_000 }, (_, i) => [`${deep}/x${i}/f`, 1] as const));
    // Synchronous: no test timeout can end it, so its time is checked after it.
    const started = performance.now();
    const dirs = manifestDirs(files);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(dirs.size).toBe(11_001);
    expect(dirs.has(`${deep}/x9999`)).toBe(true);
  });
});
