import { either as E } from 'fp-ts';
import { decodeConfig } from '../../src/core/decode-config';
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
});
