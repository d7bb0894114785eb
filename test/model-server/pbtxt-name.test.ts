/** pbtxtName: the top-level name of a Triton config.pbtxt, through comments, quoting, escapes and nesting. */
import { pbtxtName } from '../../src/model-server/pbtxt-name';

const tritonConfig = `backend: "python"
max_batch_size: 0
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]
instance_group [ { kind: KIND_CPU, count: 1 } ]
parameters { key: "name" value: { string_value: "not this" } }
`;

describe('pbtxtName', () => {
  it.each<[string, string, string]>([
    ['at the top, double quotes', 'name: "iris"\n' + tritonConfig, 'iris'],
    ['after the nested blocks, single quotes', tritonConfig + "name: 'iris'\n", 'iris'],
    ['without blanks, then a separator', 'name:"iris";backend:"python",', 'iris'],
    ['with a comment between the field and its value', 'name : # the model\n "iris"', 'iris'],
    ['in adjacent strings, concatenated', `name: "ir" 'is'`, 'iris'],
    ['past brackets and quotes inside strings and comments', `backend: "{[<" # }\nname: "iris"`, 'iris'],
    [
      'in messages opened with <>',
      'parameters < key: "k" value < string_value: "v" > > name: "iris"',
      'iris',
    ],
    ['written with escapes', String.raw`name: "\x69r\151s"`, 'iris'],
    ['with an escaped quote', String.raw`name: "ir\"is"`, 'ir"is'],
  ])('reads the name %s', (_case, text, expected) => {
    expect(pbtxtName(text)).toBe(expected);
  });

  it('decodes UTF-8 as written and as escapes', () => {
    expect(pbtxtName('name: "über"')).toBe('über');
    expect(pbtxtName(String.raw`name: "\303\274ber"`)).toBe('über');
    expect(pbtxtName(String.raw`name: "\u00fcber"`)).toBe('über');
  });

  it('gives the empty name as written (the server then takes the dir name)', () => {
    expect(pbtxtName('name: ""')).toBe('');
  });

  it.each<[string, string]>([
    ['no name at all', tritonConfig],
    ['names of nested messages only', 'input [ { name: "INPUT0" } ] output { name: "OUTPUT0" }'],
    ['a field that only ends in name', 'model_name: "iris"'],
    ['a name in a comment', '# name: "iris"\nbackend: "python"'],
    ['the name given twice', 'name: "a"\nname: "b"'],
    ['a name that is no string', 'name: iris'],
    ['a name given as a message', 'name { x: 1 }'],
    ['a name without a value', 'name:'],
    ['an unterminated string', 'name: "iris'],
    ['a string across a line', 'name: "ir\nis"'],
    ['an unknown escape', String.raw`name: "ir\qis"`],
    ['a bracket closed that was never opened', 'name: "iris" }'],
    ['a bracket never closed', 'name: "iris" input [ {'],
    ['nothing', ''],
  ])('gives no name for %s', (_case, text) => {
    expect(pbtxtName(text)).toBeUndefined();
  });
});
