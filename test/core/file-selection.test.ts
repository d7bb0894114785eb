import {
  fileFilter,
  patternListProblem,
  selectedNone,
  selectionKey,
  selectsAll,
} from '../../src/core/file-selection';

const allows = (pattern: string, path: string): boolean => fileFilter({ allowPatterns: [pattern] })(path);

describe('fileFilter', () => {
  // Each expectation is what Python's fnmatch.fnmatchcase answers (huggingface_hub's and KServe's matcher).
  it.each([
    ['*.json', 'config.json', true],
    ['*.json', 'sub/dir/config.json', true],
    ['*.json', 'config.jsonl', false],
    ['tokenizer*', 'tokenizer.json', true],
    ['tokenizer*', 'tokenizer_config.json', true],
    ['tokenizer*', 'sub/tokenizer.json', false],
    ['*/tokenizer*', 'sub/tokenizer.json', true],
    ['data/*.json', 'data/sub/a.json', true],
    ['?.bin', 'a.bin', true],
    ['?.bin', 'ab.bin', false],
    ['?', '😀', true],
    ['[abc].txt', 'b.txt', true],
    ['[abc].txt', 'd.txt', false],
    ['[!abc].txt', 'd.txt', true],
    ['[!abc].txt', 'a.txt', false],
    ['[a-c]x', 'bx', true],
    ['[a-c]x', 'dx', false],
    ['[a-]', '-', true],
    ['[-a]', '-', true],
    ['[!-c]', '-', false],
    ['[!-c]', 'b', true],
    ['[]a]', ']', true],
    ['[]a]', 'a', true],
    ['[!]a]', 'b', true],
    ['[!]a]', ']', false],
    ['[!]', '[!]', true],
    ['[!]', 'x', false],
    ['[abc', '[abc', true],
    ['[z-a]', 'a', false],
    ['[!z-a]', 'q', true],
    ['a\\*b', 'a\\xb', true],
    ['a\\*b', 'a*b', false],
    ['model.*', 'Model.bin', false],
    ['.*', '.hidden', true],
    ['.*', 'a/.hidden', false],
    ['a[.]b', 'a.b', true],
    ['(x)|y+', '(x)|y+', true],
    ['^a$', '^a$', true],
  ])('reads %j as fnmatch does: %j → %s', (pattern, path, expected) => {
    expect(allows(pattern, path)).toBe(expected);
  });

  it('takes everything under a dir for a pattern ending in /, as huggingface_hub does', () => {
    expect(allows('tokenizer/', 'tokenizer/vocab.txt')).toBe(true);
    expect(allows('tokenizer/', 'tokenizer.json')).toBe(false);
  });

  it('keeps a file that matches an allow pattern and no ignore pattern', () => {
    const selected = fileFilter({ allowPatterns: ['*.json', '*.txt'], ignorePatterns: ['config.json'] });
    expect(['a.json', 'config.json', 'b.txt', 'model.bin'].filter(selected)).toEqual(['a.json', 'b.txt']);
  });

  it('keeps every file but the ignored ones when only ignore patterns are given', () => {
    const selected = fileFilter({ ignorePatterns: ['*.msgpack', 'flax_model*'] });
    expect(['model.safetensors', 'a.msgpack', 'flax_model.bin'].filter(selected)).toEqual([
      'model.safetensors',
    ]);
  });

  it('keeps every file when there is no selection, or only empty lists', () => {
    expect(fileFilter(undefined)('anything')).toBe(true);
    expect(fileFilter({ allowPatterns: [], ignorePatterns: [] })('anything')).toBe(true);
  });

  it('matches a pattern of hundreds of stars against a long path in linear steps, not backtracking', () => {
    // Backtracking tries the ways 500 stars can split 4,000 letters: it would not end within the test's timeout.
    expect(allows(`${'*a'.repeat(500)}b`, 'a'.repeat(4000))).toBe(false);
  });

  it('matches 256 patterns of a star and 1,019 letters against a 4,000-letter name as fnmatch does', () => {
    // Each pattern differs, so none is matched once for all; the greedy match backed up 3,000 times per pattern.
    const patterns = Array.from({ length: 256 }, (_, i) => `*${'a'.repeat(1019 - String(i).length)}${i}`);
    const selected = fileFilter({ allowPatterns: patterns, ignorePatterns: patterns.slice(0, 1) });
    // Its cost is not asserted here (no test times what only a fast machine does): 9 s a name before, ~0.45 s now.
    expect(selected('a'.repeat(4000))).toBe(false);
    expect(selected(`${'a'.repeat(4000)}7`)).toBe(true);
  });
});

describe('selectsAll', () => {
  it('is true when no list names a pattern', () => {
    expect(selectsAll(undefined)).toBe(true);
    expect(selectsAll({ allowPatterns: [] })).toBe(true);
    expect(selectsAll({ ignorePatterns: ['*.bin'] })).toBe(false);
  });
});

describe('selectionKey', () => {
  it('is empty for no selection and names both lists otherwise', () => {
    expect(selectionKey({})).toBe('');
    expect(selectionKey({ allowPatterns: ['*.json'] })).toBe('allow=["*.json"] ignore=[]');
  });
});

describe('selectedNone', () => {
  it('names the patterns and how many entries there were', () => {
    expect(selectedNone({ allowPatterns: ['*.json'] }, 3, 'objects')).toBe(
      'the patterns allow=["*.json"] ignore=[] select none of its 3 objects',
    );
  });
});

describe('patternListProblem', () => {
  it.each([
    ['one pattern', ['*.json'], undefined],
    ['257 patterns', Array.from({ length: 257 }, () => 'a'), 'expected at most 256 patterns, got 257'],
    ['an empty pattern', ['a', ''], 'pattern [1] is empty'],
    ['a pattern of 1025 characters', ['x'.repeat(1025)], 'pattern [0] is longer than 1024 characters'],
  ])('answers %s', (_label, patterns, problem) => {
    expect(patternListProblem(patterns)).toBe(problem);
  });
});
