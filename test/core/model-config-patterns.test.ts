import { either as E } from 'fp-ts';
import { decodeConfig } from '../../src/core/decode-config';
import { describeConfigError } from '../../src/core/errors';
import { ModelSpec } from '../../src/core/model-config';
import { specEquals, specToJson } from '../../src/core/snapshot';

const file = '/mnt/configs/models.json';

const entry = (modelSpec: Readonly<Record<string, unknown>>): string =>
  JSON.stringify([{ modelName: 'm', modelSpec: { storageUri: 's3://b/m', ...modelSpec } }]);

const decodedSpec = (modelSpec: Readonly<Record<string, unknown>>): ModelSpec => {
  const result = decodeConfig(file, entry(modelSpec));
  if (E.isLeft(result)) throw new Error(describeConfigError(result.left));
  return [...result.right.values()][0]!;
};

const errorOf = (modelSpec: Readonly<Record<string, unknown>>): string => {
  const result = decodeConfig(file, entry(modelSpec));
  if (E.isRight(result)) throw new Error('expected the config to be rejected');
  return describeConfigError(result.left);
};

describe('ModelSpec patterns', () => {
  it('decodes allowPatterns and ignorePatterns into the selection', () => {
    expect(decodedSpec({ allowPatterns: ['*.json', 'tokenizer*'], ignorePatterns: ['config.json'] })).toEqual(
      {
        storageUri: 's3://b/m',
        selection: { allowPatterns: ['*.json', 'tokenizer*'], ignorePatterns: ['config.json'] },
      },
    );
  });

  it('reads empty lists as no selection, as KServe reads an empty list as none', () => {
    expect(decodedSpec({ allowPatterns: [], ignorePatterns: [] })).toEqual({ storageUri: 's3://b/m' });
  });

  it('takes 256 patterns of 1024 characters', () => {
    const allowPatterns = Array.from({ length: 256 }, (_, i) => `${i}`.padEnd(1024, '*'));
    expect(decodedSpec({ allowPatterns }).selection?.allowPatterns).toHaveLength(256);
  });

  it.each([
    [
      { allowPatterns: '*.json' },
      '[0].modelSpec.allowPatterns: expected an array of patterns such as ["*.json"], got "*.json"',
    ],
    [{ ignorePatterns: { a: 1 } }, '[0].modelSpec.ignorePatterns: expected an array of patterns'],
    [
      { allowPatterns: ['*.json', ''] },
      '[0].modelSpec.allowPatterns[1]: expected a non-empty pattern of at most 1024 characters, got ""',
    ],
    [
      { allowPatterns: ['ok', 3] },
      '[0].modelSpec.allowPatterns[1]: expected a pattern (a string such as "*.json"), got 3',
    ],
    [
      { ignorePatterns: ['x'.repeat(1025)] },
      '[0].modelSpec.ignorePatterns[0]: expected a non-empty pattern of at most 1024 characters',
    ],
    [
      { allowPatterns: Array.from({ length: 257 }, () => 'a') },
      '[0].modelSpec.allowPatterns: expected at most 256 patterns, got 257',
    ],
  ])('rejects %j naming the field', (modelSpec, message) => {
    expect(errorOf(modelSpec)).toContain(message);
  });

  it('names every bad field of one spec', () => {
    const message = errorOf({ memory: 'lots', allowPatterns: [''], ignorePatterns: 1 });
    expect(message).toContain('[0].modelSpec.memory: ');
    expect(message).toContain('[0].modelSpec.allowPatterns[0]: ');
    expect(message).toContain('[0].modelSpec.ignorePatterns: ');
  });

  it('encodes the patterns back next to storageUri, and leaves them out when there are none', () => {
    const spec = decodedSpec({ framework: 'onnx', ignorePatterns: ['*.bin'] });
    expect(ModelSpec.encode(spec)).toEqual({
      storageUri: 's3://b/m',
      framework: 'onnx',
      ignorePatterns: ['*.bin'],
    });
    expect(specToJson(spec)).toEqual({
      storageUri: 's3://b/m',
      framework: 'onnx',
      ignorePatterns: ['*.bin'],
    });
    expect(specToJson(decodedSpec({}))).toEqual({ storageUri: 's3://b/m' });
  });
});

describe('specEquals', () => {
  const spec = (selection?: ModelSpec['selection']): ModelSpec => ({
    storageUri: 's3://b/m',
    ...(selection !== undefined ? { selection } : {}),
  });

  it('tells specs whose patterns differ apart, so that a changed pattern downloads again', () => {
    expect(specEquals(spec({ allowPatterns: ['*.json'] }), spec({ allowPatterns: ['*.txt'] }))).toBe(false);
    expect(specEquals(spec({ allowPatterns: ['*.json'] }), spec())).toBe(false);
    expect(specEquals(spec({ allowPatterns: ['*.json'] }), spec({ ignorePatterns: ['*.json'] }))).toBe(false);
  });

  it('holds for the same patterns, and for empty lists against none', () => {
    expect(specEquals(spec({ allowPatterns: ['*.json'] }), spec({ allowPatterns: ['*.json'] }))).toBe(true);
    expect(specEquals(spec({ allowPatterns: [] }), spec())).toBe(true);
  });
});
