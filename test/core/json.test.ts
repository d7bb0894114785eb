/** Tests of parseJson: blank and malformed text told apart, values passed through. */
import { left, right } from 'fp-ts/Either';
import { parseJson } from '../../src/core/json';

describe('parseJson', () => {
  it.each([
    ['[1,{"a":null}]', [1, { a: null }]],
    [' "text" ', 'text'],
    ['0', 0],
  ])('parses %j', (text, value) => {
    expect(parseJson(text)).toEqual(right(value));
  });

  it.each(['', '  \n\t'])('calls %j blank', (text) => {
    expect(parseJson(text)).toEqual(left({ _tag: 'Blank' }));
  });

  it.each(['{', '[1,', 'nope'])('gives JSON.parse its reason for %j', (text) => {
    const result = parseJson(text);
    expect(result).toMatchObject({ _tag: 'Left', left: { _tag: 'Malformed' } });
    if (result._tag === 'Left' && result.left._tag === 'Malformed')
      expect(result.left.reason).toMatch(/JSON/);
  });
});
