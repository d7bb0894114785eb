/**
 * Two tiers, named by the test file: `*.test.ts` runs in process (`npm run test:unit`, the quick loop);
 * `*.e2e.test.ts` starts another process — the built CLI, a server, s3rver, azurite, `npm pack` (`npm run
 * test:e2e`, after a build). `npm test` runs both, the in-process tier first and the other even when it failed.
 * The long `*.soak.test.ts` files run with `npm run test:soak` (jest.soak.config.js).
 */
/** What both tiers share. */
const shared = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  transform: {
    // Type checking is `npm run lint`'s job (tsc --noEmit); transpiling per file keeps jest fast.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  // Examples import the package by name, as a consumer does; here the name is the source (tsconfig.json paths).
  moduleNameMapper: {
    '^modelsync$': '<rootDir>/src/index.ts',
    '^modelsync/testing$': '<rootDir>/src/testing/index.ts',
  },
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      ...shared,
      displayName: 'unit',
      testMatch: ['**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '\\.(e2e|soak)\\.test\\.ts$'],
    },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['**/*.e2e.test.ts'],
      // The real model servers (Triton, MLServer, KServe) and the real control plane (etcd, kube-apiserver,
      // kubectl, KServe's manager): installed by the project's own scripts the first time (minutes, into caches
      // outside the clone), a no-op after; the fixture models made beside the servers.
      globalSetup: '<rootDir>/test/e2e-setup.ts',
      globalTeardown: '<rootDir>/test/real-servers/global-teardown.ts',
    },
  ],
  // A ceiling for a test that hangs, not a claim about speed: a busy CI machine must not fail a sound test.
  testTimeout: 120_000,
  // The tests wait on timers, sockets and child processes more than on the CPU: two workers on two cores.
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/scripts/summary-reporter.js'],
};
