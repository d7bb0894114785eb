import { either as E } from 'fp-ts';
import { ModelName, modelNameProblem } from '../../src/core/model-name';

describe('ModelName', () => {
  it.each(['m1', 'my-model_2', 'Model.v1', 'a'.repeat(255), 'é'.repeat(127), '模型😀', '\ufffd'])(
    'accepts %j',
    (text) => {
      expect(E.isRight(ModelName.decode(text))).toBe(true);
    },
  );

  it.each([
    ['', 'must not be empty'],
    ['.', 'must not be "."'],
    ['..', 'must not be ".."'],
    ['.hidden', 'must not start with "."'],
    ['a/b', 'must not contain'],
    ['a\\b', 'must not contain'],
    ['a\0b', 'must not contain'],
    ['a'.repeat(256), 'at most 255 bytes'],
    ['é'.repeat(128), 'at most 255 bytes'],
    // A lone surrogate becomes U+FFFD on disk ("a\ud800" and "a\udc00" would share a dir) and throws in a URL.
    ['a\ud800', 'must be valid Unicode text'],
    ['\udc00b', 'must be valid Unicode text'],
  ])('refuses %j: %s', (text, problem) => {
    expect(modelNameProblem(text)).toContain(problem);
    const result = ModelName.decode(text);
    expect(E.isLeft(result) && result.left[0]?.message).toContain(problem);
  });

  it('refuses a non-string without a message, so the reporter says what was expected', () => {
    const result = ModelName.decode(42);
    expect(E.isLeft(result) && result.left[0]?.message).toBeUndefined();
  });
});
