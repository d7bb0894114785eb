import { either as E } from 'fp-ts';
import { selectionFromEnv } from '../../src/core/selection-env';

describe('selectionFromEnv', () => {
  // KServe's own cases (python/storage/test/test_storage.py, TestParsePatterns) and its controller's value.
  it.each([
    ['not set', {}, undefined],
    ['empty', { STORAGE_ALLOW_PATTERNS: '' }, undefined],
    ['blank', { STORAGE_ALLOW_PATTERNS: '  ' }, undefined],
    [
      'a JSON array',
      { STORAGE_ALLOW_PATTERNS: '["*.safetensors", "*.json"]' },
      { allowPatterns: ['*.safetensors', '*.json'] },
    ],
    [
      'comma-separated',
      { STORAGE_ALLOW_PATTERNS: '*.safetensors,*.json' },
      { allowPatterns: ['*.safetensors', '*.json'] },
    ],
    ['one pattern', { STORAGE_ALLOW_PATTERNS: '*.safetensors' }, { allowPatterns: ['*.safetensors'] }],
    ['a JSON string', { STORAGE_ALLOW_PATTERNS: '"*.safetensors"' }, { allowPatterns: ['*.safetensors'] }],
    [
      'spaces and empty items',
      { STORAGE_IGNORE_PATTERNS: ' *.msgpack, ,*.h5 ,' },
      { ignorePatterns: ['*.msgpack', '*.h5'] },
    ],
    ['an empty JSON array', { STORAGE_ALLOW_PATTERNS: '[]' }, undefined],
    [
      "KServe's tokenizer download and an ignore list",
      {
        STORAGE_ALLOW_PATTERNS:
          '["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json"]',
        STORAGE_IGNORE_PATTERNS: '*.msgpack,*.h5,flax_model*,tf_model*,rust_model*',
      },
      {
        allowPatterns: ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'vocab.json'],
        ignorePatterns: ['*.msgpack', '*.h5', 'flax_model*', 'tf_model*', 'rust_model*'],
      },
    ],
  ])('reads %s', (_label, env, selection) => {
    expect(selectionFromEnv(env)).toEqual(E.right(selection));
  });

  it.each([
    [
      'a JSON array with a number',
      { STORAGE_ALLOW_PATTERNS: '["*.json", 3]' },
      'STORAGE_ALLOW_PATTERNS: expected a JSON array of strings',
    ],
    [
      'JSON null',
      { STORAGE_IGNORE_PATTERNS: 'null' },
      'STORAGE_IGNORE_PATTERNS: expected a JSON array of strings',
    ],
    [
      'too many patterns',
      { STORAGE_ALLOW_PATTERNS: Array.from({ length: 300 }, (_, i) => `${i}`).join(',') },
      'STORAGE_ALLOW_PATTERNS: expected at most 256 patterns',
    ],
    [
      'a pattern too long',
      { STORAGE_ALLOW_PATTERNS: 'x'.repeat(2000) },
      'STORAGE_ALLOW_PATTERNS: pattern [0] is longer than 1024',
    ],
  ])('refuses %s, naming the variable', (_label, env, message) => {
    const result = selectionFromEnv(env);
    expect(E.isLeft(result) && result.left).toContain(message);
  });
});
