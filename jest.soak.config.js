/** The soak run (`npm run test:soak`): only the long `*.soak.test.ts` files, which `npm test` leaves out. */
const { projects } = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...projects[0],
  displayName: 'soak',
  testMatch: ['**/*.soak.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  // A soak runs for minutes; its own deadlines say what it waited for.
  testTimeout: 30 * 60 * 1000,
  reporters: ['default', '<rootDir>/scripts/summary-reporter.js'],
};
