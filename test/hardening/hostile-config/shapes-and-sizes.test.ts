/** Hostile config, in-process: wrong shapes and sizes are refused with one line; odd but valid configs apply. */
import {
  itAppliesEach,
  itRefusesEach,
  useHostileAgent,
  type BadConfig,
  type OddConfig,
} from './hostile-agent';

const hostile = useHostileAgent();

/** One entry whose modelName and modelSpec are given as JSON text. */
const one = (name: string, spec = '{"storageUri":"s3://b/m"}'): string =>
  `[{"modelName":${name},"modelSpec":${spec}}]`;
const spec = (fields: string): string => one('"m"', `{"storageUri":"s3://b/m",${fields}}`);

const shapes: BadConfig[] = [
  { kind: 'null', payload: 'null', says: '(document): expected ModelConfigs, got null' },
  { kind: 'a number', payload: '42', says: '(document): expected ModelConfigs, got 42' },
  { kind: 'a string', payload: '"models"', says: '(document): expected ModelConfigs, got "models"' },
  { kind: 'a boolean', payload: 'true', says: '(document): expected ModelConfigs, got true' },
  {
    kind: 'an object instead of an array',
    payload: '{"modelName":"m","modelSpec":{"storageUri":"s3://b/m"}}',
    says: '(document): expected ModelConfigs, got {"modelName":"m"',
  },
  { kind: 'an array of numbers', payload: '[1,2]', says: '[0]: expected ModelConfig, got 1; [1]: expected' },
  {
    kind: 'an entry without modelName',
    payload: '[{"modelSpec":{"storageUri":"s3://b/m"}}]',
    says: '[0].modelName: is missing',
  },
  { kind: 'an entry without modelSpec', payload: '[{"modelName":"m"}]', says: '[0].modelSpec: is missing' },
  {
    kind: 'a spec without storageUri',
    payload: one('"m"', '{"framework":"onnx"}'),
    says: '[0].modelSpec.storageUri: is missing',
  },
  { kind: 'a numeric modelName', payload: one('7'), says: '[0].modelName: expected ModelName, got 7' },
  {
    kind: 'a modelSpec string',
    payload: one('"m"', '"s3://b/m"'),
    says: '[0].modelSpec: expected ModelSpec, got "s3://b/m"',
  },
  {
    kind: 'a storageUri array',
    payload: one('"m"', '{"storageUri":["s3://b/m"]}'),
    says: '[0].modelSpec.storageUri: expected string',
  },
  {
    kind: 'a framework object',
    payload: spec('"framework":{"name":"onnx"}'),
    says: '[0].modelSpec.framework: expected string',
  },
  {
    kind: 'a memory that is no quantity',
    payload: spec('"memory":"lots"'),
    says: '[0].modelSpec.memory: expected a Kubernetes quantity',
  },
  {
    kind: 'a boolean memory',
    payload: spec('"memory":true'),
    says: '[0].modelSpec.memory: expected a Kubernetes quantity',
  },
  { kind: 'an empty name', payload: one('""'), says: '[0].modelName: model name "" must not be empty' },
  { kind: 'the name ".."', payload: one('".."'), says: '[0].modelName: model name ".." must not be ".."' },
  {
    kind: 'a name with a slash',
    payload: one('"a/b"'),
    says: '[0].modelName: model name "a/b" must not contain',
  },
  { kind: 'a hidden name', payload: one('".modelsync-loads"'), says: 'must not start with "."' },
  { kind: 'a name with a NUL', payload: one('"a\\u0000b"'), says: 'must not contain "/", "\\" or NUL' },
  {
    kind: 'a name with a lone surrogate (no text a directory or a URL can hold)',
    payload: one('"a\\ud800"'),
    says: '[0].modelName: model name "a\\ud800" must be valid Unicode text',
  },
  { kind: 'a name of 300 bytes', payload: one(`"${'n'.repeat(300)}"`), says: 'must be at most 255 bytes' },
];

const sizes: BadConfig[] = [
  {
    kind: 'a file over --max-config-bytes (33 MiB)',
    payload: `[${' '.repeat(33 * 1024 * 1024)}]`,
    says: 'is 34603010 bytes, over the limit of 33554432 bytes (--max-config-bytes); it was not read',
  },
  {
    kind: 'a 10 MB model name',
    payload: one(`"${'n/'.repeat(5_000_000)}"`),
    says: '[0].modelName: model name "n/n/n/',
  },
  {
    kind: 'a 10 MB memory',
    payload: spec(`"memory":"${'9'.repeat(10_000_000)}Qi"`),
    says: '[0].modelSpec.memory: expected a Kubernetes quantity',
  },
  {
    kind: 'a 10 MB storageUri (each log line of the model would hold it)',
    payload: spec(`"framework":"onnx","memory":"1Gi"`).replace(
      's3://b/m',
      `s3://b/${'k'.repeat(10_000_000)}`,
    ),
    says: '[0].modelSpec.storageUri: expected a string of at most 16384 characters',
  },
  {
    kind: 'a memory of 4 million digits (seconds of CPU to read)',
    payload: spec(`"memory":"0.${'3'.repeat(4_000_000)}"`),
    says: '[0].modelSpec.memory: expected a Kubernetes quantity of at most 1000 characters',
  },
  {
    kind: '100,000 entries, the last one bad',
    payload: `[${[
      ...Array.from(
        { length: 99_999 },
        (_, i) => `{"modelName":"m${i}","modelSpec":{"storageUri":"s3://b/${i}"}}`,
      ),
      '{"modelName":"last","modelSpec":{"storageUri":"s3://b/last","memory":"-"}}',
    ].join(',')}]`,
    says: '[99999].modelSpec.memory: expected a Kubernetes quantity',
  },
  {
    kind: 'a million zeros',
    payload: `[${Array(1_000_000).fill('0').join(',')}]`,
    says: '[0]: expected ModelConfig, got 0',
  },
];

const odd: OddConfig[] = [
  {
    kind: 'extra fields at every level',
    payload: (keep, probe, name) =>
      JSON.stringify([
        {
          modelName: 'keep',
          modelSpec: { storageUri: keep, framework: 'sklearn', x: [1, { y: null }] },
          z: 1,
        },
        { modelName: name, modelSpec: { storageUri: probe, framework: 'sklearn', future: true }, note: 'hi' },
      ]),
  },
  {
    kind: 'CRLF line ends, tabs and keys in another order',
    payload: (keep, probe, name) =>
      `[\r\n\t{"modelSpec":{"framework":"sklearn","storageUri":${JSON.stringify(keep)}},"modelName":"keep"},\r\n` +
      `\t{"modelSpec":{"framework":"sklearn","storageUri":${JSON.stringify(probe)}},"modelName":"${name}"}\r\n]\r\n`,
  },
  {
    kind: 'a null framework and memory (Go, KServe, leaves such a field unset)',
    payload: (keep, probe, name) =>
      JSON.stringify([
        { modelName: 'keep', modelSpec: { storageUri: keep, framework: 'sklearn' } },
        { modelName: name, modelSpec: { storageUri: probe, framework: null, memory: null } },
      ]),
  },
  {
    kind: 'a memory with spaces around it (KServe trims them)',
    payload: (keep, probe, name) =>
      JSON.stringify([
        { modelName: 'keep', modelSpec: { storageUri: keep, framework: 'sklearn' } },
        { modelName: name, modelSpec: { storageUri: probe, framework: 'sklearn', memory: ' 1Gi ' } },
      ]),
  },
  {
    kind: 'a memory given as a JSON number',
    payload: (keep, probe, name) =>
      JSON.stringify([
        { modelName: 'keep', modelSpec: { storageUri: keep, framework: 'sklearn' } },
        { modelName: name, modelSpec: { storageUri: probe, framework: 'sklearn', memory: 1073741824 } },
      ]),
  },
];

describe('hostile config: shapes', () => itRefusesEach(hostile, shapes));

describe('hostile config: sizes', () => itRefusesEach(hostile, sizes));

describe('odd but valid config', () => itAppliesEach(hostile, odd));
