/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Long versions of the suites run with `npm run test:soak` (jest.soak.config.js).
  testPathIgnorePatterns: ['/node_modules/', '\\.soak\\.test\\.ts$'],
  transform: {
    // Type checking is `npm run lint`'s job (tsc --noEmit); transpiling per file keeps jest fast.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  // Examples import the package by name, as a consumer does; here the name is the source (tsconfig.json paths).
  moduleNameMapper: {
    '^modelsync$': '<rootDir>/src/index.ts',
    '^modelsync/testing$': '<rootDir>/src/testing/index.ts',
  },
  testTimeout: 30000,
  reporters: ['default', '<rootDir>/scripts/summary-reporter.js'],
  // Tests that start servers and watchers must leave nothing running.
  detectOpenHandles: false,
};
