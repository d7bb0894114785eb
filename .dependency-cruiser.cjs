/**
 * The import direction of docs/architecture.md, checked on every `npm run lint`:
 * core <- pipeline <- app <- cli; edge implements ports and is wired only by the composition files.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-is-pure',
      comment:
        'core/ holds data and pure functions: no rxjs, no node built-ins, no logger, nothing outside core.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: {
        pathNot: ['^src/core/', '^node_modules/(io-ts|fp-ts)/'],
      },
    },
    {
      name: 'core-no-node-builtins',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'pipeline-depends-on-core-and-ports-only',
      comment:
        'Operators and the loader get their effects as parameters; they never import an edge or the app.',
      severity: 'error',
      from: { path: '^src/(pipeline|loader)/' },
      to: { path: '^src/(edge|testing|app|cli|production|index|start-agent|modes|parse-args)' },
    },
    {
      name: 'pipeline-no-node-builtins',
      severity: 'error',
      from: { path: '^src/(pipeline|loader)/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'edge-does-not-import-pipeline-or-app',
      severity: 'error',
      from: { path: '^src/edge/' },
      to: { path: '^src/(pipeline|loader|app|cli|production|index|testing|start-agent|modes|parse-args)' },
    },
    {
      name: 'only-composition-files-import-edge',
      comment:
        'Edges are wired in production.ts, production-storage.ts and production-surface.ts (and offered by index.ts); nothing else may reach for them.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: [
          '^src/edge/',
          '^src/production(-storage|-surface)?\\.ts$',
          '^src/index\\.ts$',
          '^src/cli\\.ts$',
          '^src/demo\\.ts$',
          '^src/testing/',
        ],
      },
      to: { path: '^src/edge/' },
    },
    {
      name: 'only-demo-and-testing-import-testing',
      comment:
        'src/testing/ is the test kit (modelsync/testing): the library itself never depends on it; only the demo does.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/testing/', '^src/demo\\.ts$'] },
      to: { path: '^src/testing/' },
    },
    {
      name: 'testing-kit-stands-alone',
      comment:
        'src/testing/ (stand-in servers, kubelet emulator) may use core and edge helpers, never the app.',
      severity: 'error',
      from: { path: '^src/testing/' },
      to: { path: '^src/(pipeline|loader|app|cli|production|start-agent|modes|parse-args)' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
