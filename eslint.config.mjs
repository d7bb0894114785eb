// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import rxjsX from 'eslint-plugin-rxjs-x';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'scripts/**',
      '.bench-build/**',
      '.demo-build/**',
      'coverage/**',
      '.model-servers/**',
      'node_modules/**',
      '*.config.js',
      '*.config.mjs',
      '.dependency-cruiser.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  rxjsX.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      'rxjs-x/no-unsafe-catch': 'error',
      'rxjs-x/no-unsafe-takeuntil': 'error',
      'rxjs-x/no-ignored-subscription': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Tests subscribe directly to observe streams; the one-subscription rule is for the app.
      'rxjs-x/no-ignored-subscription': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
