/** Tests of parseJson (blank, malformed, duplicate keys, depth) and previewJson (bounded whatever the value). */
import { left, right } from 'fp-ts/Either';
import { describeJsonProblem, parseJson, previewJson, type JsonProblem } from '../../../src/core/json/json';
import { maxJsonDepth } from '../../../src/core/json/json-structure';

const problemOf = (text: string): JsonProblem => {
  const result = parseJson(text);
  if (result._tag === 'Right') throw new Error(`expected ${text.slice(0, 60)} to be refused`);
  return result.left;
};

const nested = (depth: number, open = '[', close = ']', inner = ''): string =>
  `${open.repeat(depth)}${inner}${close.repeat(depth)}`;

describe('parseJson', () => {
  it.each([
    ['[1,{"a":null}]', [1, { a: null }]],
    [' "text" ', 'text'],
    ['0', 0],
    ['[{"a":1},{"a":2}]', [{ a: 1 }, { a: 2 }]],
    ['{"a":{"a":{"a":1}}}', { a: { a: { a: 1 } } }],
    ['{"a\\"":1,"a":2}', { 'a"': 1, a: 2 }],
    ['{"x":"\\\\","y":"\\"{[,"}', { x: '\\', y: '"{[,' }],
  ])('parses %j', (text, value) => {
    expect(parseJson(text)).toEqual(right(value));
  });

  it.each(['', '  \n\t'])('calls %j blank', (text) => {
    expect(parseJson(text)).toEqual(left({ _tag: 'Blank' }));
  });

  it.each([
    ['{', 'line 1, column 2: the file ends before the JSON is complete'],
    ['[1,', 'line 1, column 4: the file ends before the JSON is complete'],
    ['nope', "line 1, column 1: unexpected 'n'; expected a value"],
    ['[1,]', "line 1, column 4: unexpected ']' after ','; JSON allows no trailing comma"],
    ['{"a":1,}', "line 1, column 8: unexpected '}' after ','; JSON allows no trailing comma"],
    ['[\n  {"a" 1}\n]', "line 2, column 8: unexpected '1'; expected ':' after the key"],
    ['["abc', 'line 1, column 2: this string never ends (the file may be cut short)'],
    ['["a\u0000"]', 'line 1, column 4: a NUL character (U+0000) inside a string'],
    ['["\\x"]', "line 1, column 3: invalid escape: a backslash followed by 'x'"],
    ['[01]', "line 1, column 3: unexpected '1'; expected ',' or ']'"],
    ['[] []', "line 1, column 4: unexpected '['; expected nothing more after the JSON value"],
    ['\uFEFF[]', 'line 1, column 1: unexpected a byte-order mark (U+FEFF); expected a value'],
  ])('says where and why %j is not JSON', (text, reason) => {
    const problem = problemOf(text);
    expect(problem._tag).toBe('Malformed');
    expect(describeJsonProblem(problem)).toContain(reason);
  });

  it('never quotes more than one character of malformed text (it may hold a credential)', () => {
    const text =
      '[{"modelName":"m","modelSpec":{"storageUri":"https://u:hunter2@h/m?X-Amz-Signature=abc" x}}]';
    const reason = describeJsonProblem(problemOf(text));
    expect(reason).toBe(`line 1, column ${text.indexOf(' x') + 2}: unexpected 'x'; expected ',' or '}'`);
  });

  it('refuses a duplicate key, naming the path of its object', () => {
    const text = JSON.stringify([
      {},
      {},
      {},
      { modelName: 'm', modelSpec: { storageUri: 's3://b/1' } },
    ]).replace(
      '"storageUri":"s3://b/1"',
      '"storageUri":"s3://b/1","framework":"onnx","storageUri":"s3://b/2"',
    );
    expect(problemOf(text)).toEqual({
      _tag: 'Structure',
      problems: ['[3].modelSpec: duplicate key "storageUri"'],
      count: 1,
    });
  });

  it.each([
    ['{"a":1,"a":2}', '(document): duplicate key "a"'],
    ['[{"modelName":"a","modelName":"b"}]', '[0]: duplicate key "modelName"'],
    ['{"a":1,"\\u0061":2}', '(document): duplicate key "\\u0061"'],
    ['[0,{"x":[{"y":{"k":1,"k":1}}]}]', '[1].x[0].y: duplicate key "k"'],
  ])('finds the duplicate key in %j', (text, line) => {
    expect(describeJsonProblem(problemOf(text))).toBe(line);
  });

  it('finds a duplicate among hundreds of keys, and lists at most ten of many duplicates', () => {
    const keys = Array.from({ length: 500 }, (_, i) => `"k${i}":${i}`);
    expect(describeJsonProblem(problemOf(`{${[...keys, '"k499":0'].join(',')}}`))).toBe(
      '(document): duplicate key "k499"',
    );
    const twice = Array.from({ length: 25 }, (_, i) => `{"k":${i},"k":${i}}`);
    const problem = problemOf(`[${twice.join(',')}]`);
    expect(problem).toMatchObject({ _tag: 'Structure', count: 25 });
    expect(describeJsonProblem(problem)).toMatch(/^\[0\]: duplicate key "k"; \[1\]: .*; and 15 more$/);
  });

  it('does not mistake the same key in sibling or nested objects for a duplicate', () => {
    expect(parseJson('[{"a":{"a":1},"b":{"a":2}},{"a":3}]')._tag).toBe('Right');
  });

  it.each([
    ['10,000 nested arrays', nested(10_000)],
    ['1,000,000 nested arrays', nested(1_000_000)],
    ['100,000 nested objects', nested(100_000, '{"a":', '}', '1')],
    ['deep arrays that never close', '['.repeat(100_000)],
  ])('refuses %s before parsing them, saying where', (_, text) => {
    const problem = problemOf(text);
    expect(problem._tag).toBe('Structure');
    expect(describeJsonProblem(problem)).toMatch(
      new RegExp(`^\\S+: nested deeper than ${maxJsonDepth} levels of arrays and objects$`),
    );
  });

  it(`accepts nesting of ${maxJsonDepth} levels`, () => {
    expect(parseJson(nested(maxJsonDepth))._tag).toBe('Right');
  });
});

describe('previewJson', () => {
  it.each([
    [null, 'null'],
    [[1, 'a', { b: true }], '[1,"a",{"b":true}]'],
    [{}, '{}'],
    ['x'.repeat(100), `"${'x'.repeat(76)}...`],
    [
      Array.from({ length: 1000 }, (_, i) => i),
      `[${Array.from({ length: 40 }, (_, i) => i).join(',')}`.slice(0, 77) + '...',
    ],
  ])('shows %j in at most 80 characters', (value, text) => {
    expect(previewJson(value)).toBe(text);
  });

  it('shows a million nested arrays and a 30 MB string without recursing or copying them', () => {
    let deep: unknown[] = [];
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    expect(previewJson(deep)).toBe(`${'['.repeat(77)}...`);
    expect(previewJson('y'.repeat(30_000_000), 20)).toBe(`"${'y'.repeat(16)}...`);
  });
});
