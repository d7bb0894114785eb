import { either as E } from 'fp-ts';
import { decodeConfig } from '../../src/core/decode-config';
import { ModelConfig, ModelSpec } from '../../src/core/model-config';
import { describeConfigError } from '../../src/core/errors';
import { snapshotEquals } from '../../src/core/snapshot';
import { modelsJson, snap, spec } from '../helpers/fixtures';

const file = '/mnt/configs/models.json';

const errorOf = (text: string): string => {
  const result = decodeConfig(file, text);
  if (E.isRight(result)) throw new Error(`expected ${text} to be rejected`);
  return describeConfigError(result.left);
};

describe('decodeConfig', () => {
  it('decodes the KServe format into a snapshot', () => {
    const text = modelsJson({
      m1: 's3://b/m1',
      m2: { storageUri: 'gs://b/m2', framework: 'onnx', memory: '1Gi' },
    });
    const result = decodeConfig(file, text);
    expect(E.isRight(result)).toBe(true);
    if (E.isRight(result)) {
      expect(
        snapshotEquals(
          result.right,
          snap({ m1: spec('s3://b/m1', '100Mi'), m2: spec('gs://b/m2', '1Gi', 'onnx') }),
        ),
      ).toBe(true);
    }
  });

  it('reads [] as no models', () => {
    expect(decodeConfig(file, '[]')).toEqual(E.right(new Map()));
  });

  it('ignores unknown fields, as KServe does', () => {
    const result = decodeConfig(
      file,
      '[{"modelName":"m","extra":1,"modelSpec":{"storageUri":"s3://b/m","x":2}}]',
    );
    expect(E.isRight(result)).toBe(true);
  });

  it('refuses a storageUri or framework over 16384 characters, which no store takes and every log line would repeat', () => {
    const entry = (storageUri: string, framework = 'onnx'): string =>
      JSON.stringify([{ modelName: 'm', modelSpec: { storageUri, framework } }]);
    const longest = `s3://b/${'k'.repeat(16384 - 7)}`;
    expect(E.isRight(decodeConfig(file, entry(longest, 'f'.repeat(16384))))).toBe(true);
    expect(errorOf(entry(`${longest}k`))).toContain(
      '[0].modelSpec.storageUri: expected a string of at most 16384 characters, got "s3://b/kkk',
    );
    expect(errorOf(entry('s3://b/m', 'f'.repeat(10_000_000)))).toContain(
      '[0].modelSpec.framework: expected a string of at most 16384 characters',
    );
  });

  it.each([
    ['past the float range', '1e400', '1e400'],
    ['an integer past 2^53', '12345678901234567890123', '12345678901234567890123'],
    ['a fraction past a double\u2019s precision', '1.00000000000000000001', '1.00000000000000000001'],
    ['an exponent in capitals, with its sign', '3E+9', '3G'],
  ])(
    'reads a memory written as a JSON number %s by its text, as Go\u2019s Quantity reads the raw bytes',
    (_case, number, same) => {
      const entry = (memory: string): string =>
        `[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","memory":${memory}}}]`;
      const fromNumber = decodeConfig(file, entry(number));
      const fromText = decodeConfig(file, entry(JSON.stringify(same)));
      if (E.isLeft(fromNumber)) throw new Error(describeConfigError(fromNumber.left));
      expect(E.isRight(fromText) && snapshotEquals(fromNumber.right, fromText.right)).toBe(true);
      expect(fromNumber.right.get('m' as never)?.memory?.text).toBe(number);
    },
  );

  it('names a JSON number memory no quantity takes by its text (1e1001: an exponent past 1000)', () => {
    expect(errorOf('[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","memory":1e1001}}]')).toContain(
      '[0].modelSpec.memory: expected a Kubernetes quantity such as "100Mi", "1Gi" or "0.5", got 1e1001',
    );
  });

  it('refuses an object standing for a number (only a number JSON.parse read is kept as text)', () => {
    expect(
      errorOf('[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","memory":{"text":"1Gi"}}}]'),
    ).toContain('[0].modelSpec.memory: expected a Kubernetes quantity');
  });

  it('keeps a number as a number where the config wants no quantity (a modelName of 1e400 is no name)', () => {
    expect(errorOf('[{"modelName":1e400,"modelSpec":{"storageUri":"s3://b/m"}}]')).toContain('[0].modelName');
  });

  it('reads a null framework, memory or pattern list as absent, as KServe does (Go leaves the field unset)', () => {
    const result = decodeConfig(
      file,
      '[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","framework":null,"memory":null,' +
        '"allowPatterns":null,"ignorePatterns":null}}]',
    );
    expect(result).toEqual(E.right(new Map([['m', { storageUri: 's3://b/m' }]])));
  });

  it.each([
    ['', 'is not valid JSON: the file is empty'],
    ['  \n', 'is not valid JSON: the file is empty'],
    ['[{"modelName": "m1", "modelSp', 'is not valid JSON'],
    ['null', '(document): expected ModelConfigs, got null'],
    ['{}', '(document): expected ModelConfigs'],
    ['[{"modelName":"m","modelSpec":{}}]', '[0].modelSpec.storageUri: is missing'],
    ['[{"modelSpec":{"storageUri":"s3://b/m"}}]', '[0].modelName: is missing'],
    [
      '[{"modelName":"a/b","modelSpec":{"storageUri":"s3://b/m"}}]',
      '[0].modelName: model name "a/b" must not contain',
    ],
    [
      '[{"modelName":"..","modelSpec":{"storageUri":"s3://b/m"}}]',
      '[0].modelName: model name ".." must not be ".."',
    ],
    [
      '[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","memory":"lots"}}]',
      '[0].modelSpec.memory: expected a Kubernetes quantity',
    ],
    [
      '[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","framework":3}}]',
      '[0].modelSpec.framework: expected string, got 3',
    ],
    ['[1]', '[0]: expected ModelConfig, got 1'],
  ])('rejects %j naming the field: %s', (text, message) => {
    expect(errorOf(text)).toContain(file);
    expect(errorOf(text)).toContain(message);
  });

  it('rejects duplicate model names, naming both positions', () => {
    const text = `[${[
      '{"modelName":"m1","modelSpec":{"storageUri":"s3://b/1"}}',
      '{"modelName":"m2","modelSpec":{"storageUri":"s3://b/2"}}',
      '{"modelName":"m1","modelSpec":{"storageUri":"s3://b/1"}}',
    ].join(',')}]`;
    expect(errorOf(text)).toContain('[2].modelName: "m1" is already listed at [0]');
  });

  it('lists at most ten bad fields', () => {
    const entries = Array.from({ length: 15 }, () => '{"modelName":"","modelSpec":{"storageUri":"x"}}');
    expect(errorOf(`[${entries.join(',')}]`)).toContain('and 5 more');
  });

  const entry = (spec: string, name = '"m"'): string => `[{"modelName":${name},"modelSpec":${spec}}]`;
  const deepArray = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it.each([
    ['10,000 nested arrays', deepArray(10_000)],
    ['1,000,000 nested arrays', deepArray(1_000_000)],
    ['100,000 nested objects', `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`],
    [
      '10,000 nested arrays as a framework',
      entry(`{"storageUri":"s3://b/m","framework":${deepArray(10_000)}}`),
    ],
    ['10,000 nested arrays as a memory', entry(`{"storageUri":"s3://b/m","memory":${deepArray(10_000)}}`)],
    [
      '10,000 nested objects as an ignored field',
      entry(`{"storageUri":"s3://b/m","x":${'{"a":'.repeat(1e4)}1${'}'.repeat(1e4)}}`),
    ],
  ])('rejects %s with one bounded line instead of throwing', (_, text) => {
    const message = errorOf(text);
    expect(message).toContain(`${file} is not a valid model list: `);
    expect(message).toContain('nested deeper than 64 levels of arrays and objects');
    expect(message.length).toBeLessThan(400);
  });

  it.each([
    [
      'a storageUri of 40 nested arrays',
      entry(`{"storageUri":${deepArray(40)}}`),
      '[0].modelSpec.storageUri: expected string, got [[[[',
    ],
    [
      'a memory of 40 nested arrays',
      entry(`{"storageUri":"s3://b/m","memory":${deepArray(40)}}`),
      '[0].modelSpec.memory: expected a Kubernetes quantity',
    ],
    [
      'a 10 MB model name',
      entry('{"storageUri":"s3://b/m"}', `"${'n/'.repeat(5_000_000)}"`),
      '[0].modelName: model name "n/n/n/',
    ],
    [
      'a 10 MB memory',
      entry(`{"storageUri":"s3://b/m","memory":"${'9'.repeat(10_000_000)}x"}`),
      '[0].modelSpec.memory: expected',
    ],
  ])('shows %s in a bounded line', (_, text, line) => {
    const message = errorOf(text);
    expect(message).toContain(line);
    expect(message.length).toBeLessThan(400);
  });

  it('never shows the credentials of a URI given where another value belongs', () => {
    const message = errorOf(
      entry('{"storageUri":"s3://b/m","framework":{"url":"https://u:hunter2@h/m?sig=s3cret"}}'),
    );
    expect(message).toContain('[0].modelSpec.framework: ');
    const bad = errorOf(entry('{"storageUri":"s3://b/m"}', '"https://u:hunter2@h/m?sig=s3cret"'));
    expect(`${message} ${bad}`).not.toMatch(/hunter2|s3cret/);
  });

  it('rejects a million bad entries with ten lines and a count of the rest', () => {
    const message = errorOf(`[${Array(1_000_000).fill('1').join(',')}]`);
    expect(message).toContain('[0]: expected ModelConfig, got 1; [1]: expected ModelConfig, got 1');
    expect(message).toContain('; and 999990 more');
  });

  it('rejects 100,000 entries of one name, naming the first copies', () => {
    const text = `[${Array(100_000).fill('{"modelName":"m","modelSpec":{"storageUri":"s3://b/m"}}').join(',')}]`;
    const message = errorOf(text);
    expect(message).toContain(
      '[1].modelName: "m" is already listed at [0]; [2].modelName: "m" is already listed at [0]',
    );
    expect(message).toContain('and 99989 more');
  });

  it('rejects a duplicate key, naming the path of its object', () => {
    const text = `[${[1, 2, 3].map((i) => `{"modelName":"m${i}","modelSpec":{"storageUri":"s3://b/${i}"}}`).join(',')},${'{"modelName":"m4","modelSpec":{"storageUri":"s3://b/4","storageUri":"s3://b/5"}}'}]`;
    expect(errorOf(text)).toBe(
      `${file} is not a valid model list: [3].modelSpec: duplicate key "storageUri"`,
    );
  });

  it("reads a key spelt in another case, as KServe's agent does (Go's decoder matches keys regardless of case), and refuses two spellings of one key", () => {
    // `storageURI` is the Go field's own name; `ſ` (U+017F) and `K` (U+212A) fold to s and k in Go as well.
    const text = JSON.stringify([
      { ModelName: 'm1', MODELSPEC: { storageURI: 's3://b/1', Framework: 'onnx', MEMORY: '1Gi' } },
      { modelname: 'm2', modelSpec: { ſtorageUri: 's3://b/2', 'framewor\u212a': 'sklearn' } },
      { modelName: 'm3', modelSpec: { storageUri: 's3://b/3', AllowPatterns: ['*.onnx'] } },
    ]);
    const result = decodeConfig(file, text);
    const decoded = E.isRight(result)
      ? [...result.right].map(([name, spec]) => [name, ModelSpec.encode(spec)])
      : result;
    expect(decoded).toEqual([
      ['m1', { storageUri: 's3://b/1', framework: 'onnx', memory: '1Gi' }],
      ['m2', { storageUri: 's3://b/2', framework: 'sklearn' }],
      ['m3', { storageUri: 's3://b/3', allowPatterns: ['*.onnx'] }],
    ]);
    expect(
      errorOf('[{"modelName":"m","modelSpec":{"storageUri":"s3://b/old","StorageUri":"s3://b/new"}}]'),
    ).toBe(
      `${file} is not a valid model list: [0].modelSpec: duplicate key "StorageUri" (the key "storageUri" in another case)`,
    );
    expect(errorOf('[{"modelName":"m","MODELNAME":"n","modelSpec":{"storageUri":"s3://b/m"}}]')).toBe(
      `${file} is not a valid model list: [0]: duplicate key "MODELNAME" (the key "modelName" in another case)`,
    );
    // A key no fold of which is a field stays unknown, and ignored.
    expect(
      E.isRight(
        decodeConfig(file, '[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","storage_uri":1}}]'),
      ),
    ).toBe(true);
  });

  it('decodes 100,000 models', () => {
    const text = `[${Array.from({ length: 100_000 }, (_, i) => `{"modelName":"m${i}","modelSpec":{"storageUri":"s3://b/${i}","memory":"1Gi"}}`).join(',')}]`;
    const result = decodeConfig(file, text);
    expect(E.isRight(result) && result.right.size).toBe(100_000);
  });

  it('turns a throw from inside the decoder (a bug) into a ConfigError instead of throwing it', () => {
    const validate = jest.spyOn(ModelConfig, 'validate').mockImplementation(() => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    try {
      expect(errorOf('[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m"}}]')).toBe(
        `${file} is not a valid model list: could not be checked (a modelsync bug): "Maximum call stack size exceeded"`,
      );
    } finally {
      validate.mockRestore();
    }
  });
});
