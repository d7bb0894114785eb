/** Hostile config, in-process: deep nesting, wrong encodings, duplicates and broken syntax, each refused with one line. */
import {
  itAppliesEach,
  itRefusesEach,
  useHostileAgent,
  type BadConfig,
  type OddConfig,
} from './hostile-agent';

const hostile = useHostileAgent();

const arrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const valid = '[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m","framework":"onnx"}}]';
const utf16 = (text: string, endian: 'le' | 'be', bom: boolean): Buffer => {
  const le = Buffer.from(`${bom ? '\ufeff' : ''}${text}`, 'utf16le');
  return endian === 'le' ? le : le.swap16();
};
const spec = (fields: string): string =>
  `[{"modelName":"m","modelSpec":{"storageUri":"s3://b/m",${fields}}}]`;
const deepLine = 'nested deeper than 64 levels of arrays and objects';

const nesting: BadConfig[] = [
  { kind: '10,000 nested arrays', payload: arrays(10_000), says: `${'[0]'.repeat(20)}` },
  { kind: '1,000,000 nested arrays', payload: arrays(1_000_000), says: deepLine },
  {
    kind: '100,000 nested objects',
    payload: objects(100_000),
    says: `a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a`,
  },
  {
    kind: 'deep arrays as a framework',
    payload: spec(`"framework":${arrays(10_000)}`),
    says: `[0].modelSpec.framework[0][0]`,
  },
  {
    kind: 'deep objects in an ignored field of a spec',
    payload: spec(`"extra":${objects(1000)}`),
    says: `[0].modelSpec.extra.a.a.a`,
  },
  {
    kind: 'a storageUri of 40 nested arrays',
    payload: `[{"modelName":"m","modelSpec":{"storageUri":${arrays(40)}}}]`,
    says: '[0].modelSpec.storageUri: expected string, got [[[[',
  },
];

const encodings: BadConfig[] = [
  {
    kind: 'UTF-16 little-endian with a BOM',
    payload: utf16(valid, 'le', true),
    says: 'is UTF-16 little-endian text (with a byte-order mark); models.json must be UTF-8',
  },
  {
    kind: 'UTF-16 big-endian with a BOM',
    payload: utf16(valid, 'be', true),
    says: 'is UTF-16 big-endian text (with a byte-order mark)',
  },
  {
    kind: 'UTF-16 little-endian without a BOM',
    payload: utf16(valid, 'le', false),
    says: 'is UTF-16 little-endian text;',
  },
  {
    kind: 'UTF-32',
    payload: Buffer.from([0xff, 0xfe, 0, 0, 0x5b, 0, 0, 0, 0x5d, 0, 0, 0]),
    says: 'is UTF-32 little-endian text',
  },
  {
    kind: 'Latin-1 text',
    payload: Buffer.from('[{"modelName":"modèle","modelSpec":{"storageUri":"s3://b/m"}}]', 'latin1'),
    says: 'is not valid UTF-8 text (byte 0xE8 at offset 18; Latin-1 or Windows-1252?)',
  },
  {
    kind: 'a file of NUL bytes (zero-filled by a crash)',
    payload: Buffer.alloc(4096),
    says: 'is binary data, not text (a NUL byte at offset 0)',
  },
  {
    kind: 'a raw NUL byte inside a name',
    payload: Buffer.from('[{"modelName":"a\u0000","modelSpec":{"storageUri":"s3://b/m"}}]'),
    says: 'a NUL byte at offset 16',
  },
];

const duplicates: BadConfig[] = [
  {
    kind: 'a model listed twice',
    payload: `[${valid.slice(1, -1)},${valid.slice(1, -1)}]`,
    says: '[1].modelName: "m" is already listed at [0]',
  },
  {
    kind: 'storageUri given twice',
    payload: spec('"storageUri":"s3://b/other"'),
    says: '[0].modelSpec: duplicate key "storageUri"',
  },
  {
    kind: 'modelName given twice',
    payload: '[{"modelName":"a","modelSpec":{"storageUri":"s3://b/m"},"modelName":"b"}]',
    says: '[0]: duplicate key "modelName"',
  },
  {
    kind: 'a key given twice, once escaped',
    payload: '[{"modelName":"a","model\\u004eame":"b","modelSpec":{"storageUri":"s3://b/m"}}]',
    says: '[0]: duplicate key "model\\u004eame"',
  },
];

const syntax: BadConfig[] = [
  { kind: 'an empty file', payload: '', says: 'is not valid JSON: the file is empty' },
  { kind: 'only whitespace', payload: ' \n\t\n', says: 'is not valid JSON: the file is empty' },
  {
    kind: 'a write cut short',
    payload: valid.slice(0, 40),
    says: 'is not valid JSON: line 1, column 32: this string never ends (the file may be cut short)',
  },
  {
    kind: 'a write cut between entries',
    payload: `[${valid.slice(1, -1)},`,
    says: 'line 1, column 77: the file ends before the JSON is complete',
  },
  {
    kind: 'a trailing comma',
    payload: `[${valid.slice(1, -1)},]`,
    says: "unexpected ']' after ','; JSON allows no trailing comma",
  },
  {
    kind: 'a comment',
    payload: `// models\n${valid}`,
    says: "line 1, column 1: unexpected '/'; expected a value",
  },
  {
    kind: 'single quotes',
    payload: "[{'modelName':'m'}]",
    says: "line 1, column 3: unexpected '''; expected a key in double quotes or '}'",
  },
  {
    kind: 'two documents',
    payload: `${valid}\n${valid}`,
    says: "line 2, column 1: unexpected '['; expected nothing more after the JSON value",
  },
];

const odd: OddConfig[] = [
  {
    kind: 'a UTF-8 byte-order mark (Windows editors)',
    payload: (keep, probe, name) =>
      Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(
          JSON.stringify([
            { modelName: 'keep', modelSpec: { storageUri: keep, framework: 'sklearn' } },
            { modelName: name, modelSpec: { storageUri: probe, framework: 'sklearn' } },
          ]),
        ),
      ]),
  },
  {
    kind: 'escaped keys and non-ASCII text',
    payload: (keep, probe, name) =>
      `[{"model\\u004eame":"keep","modelSpec":{"storageUri":${JSON.stringify(keep)},"framework":"sklearn","note":"modèle ✓"}},` +
      `{"modelName":"${name}","modelSpec":{"storageUri":${JSON.stringify(probe)},"framework":"sklearn"}}]`,
  },
];

describe('hostile config: nesting', () => itRefusesEach(hostile, nesting));

describe('hostile config: encodings', () => itRefusesEach(hostile, encodings));

describe('hostile config: duplicates', () => itRefusesEach(hostile, duplicates));

describe('hostile config: broken syntax and truncated writes', () => itRefusesEach(hostile, syntax));

describe('odd but valid encodings', () => itAppliesEach(hostile, odd));
