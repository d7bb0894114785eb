/**
 * The rules between rooms (docs/architecture.md, "Rooms and the rules between them"), checked on every
 * `npm run lint`. From the bottom up:
 *
 *   core/ (pure; core/json/ and core/flags/ inside it, the flags known to command/, wiring/ and the entries only)  <-  ports.ts
 *   <-  the floor: net/, fs/, log/ (effects every capability shares; none imports another)
 *   <-  the capabilities: config-source/, storage/, model-dir/, model-server/, surface/ (never a sibling)
 *   pipeline/, loader/ (core and ports only)  <-  agent/ (no effect folder)
 *   <-  wiring/ (builds the capabilities)  <-  command/  <-  cli.ts;  index.ts and testing/ are faces of their own.
 *
 * Across rooms only a room's face (its index.ts) is imported; core/ is the shared vocabulary and open file by file.
 */
const capabilities = '(config-source|storage|model-dir|model-server|surface)';
const floor = '(net|fs|log)';
const faced =
  '(agent|command|wiring|loader|pipeline|config-source|storage|model-dir|model-server|surface|net|fs|log|testing)';

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
      to: { pathNot: ['^src/core/', '^node_modules/(io-ts|fp-ts)/'] },
    },
    {
      name: 'core-no-node-builtins',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'core-json-stands-alone',
      comment: 'The JSON checks know nothing of models: core/json/ imports nothing else in core.',
      severity: 'error',
      from: { path: '^src/core/json/' },
      to: { path: '^src/core/', pathNot: '^src/core/json/' },
    },
    {
      name: 'only-the-command-line-knows-flags',
      comment:
        'The flag table is known to command/, wiring/, cli.ts and index.ts alone: the domain and the capabilities ' +
        'take plain settings of their own (wiring maps AppConfig onto them), and an error that names a setting ' +
        'gets the name from whoever builds the capability.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: ['^src/core/flags/', '^src/(command|wiring)/', '^src/(index|cli)\\.ts$'],
      },
      to: { path: '^src/core/flags/' },
    },
    {
      name: 'ports-import-only-core',
      severity: 'error',
      from: { path: '^src/ports\\.ts$' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    {
      name: 'pipeline-and-loader-import-only-core-and-ports',
      comment:
        'Operators and the loader get their effects as parameters; they import neither each other nor an effect.',
      severity: 'error',
      from: { path: '^src/(pipeline|loader)/' },
      to: { path: '^src/', pathNot: ['^src/core/', '^src/ports\\.ts$', '^src/$1/'] },
    },
    {
      name: 'pipeline-and-loader-no-node-builtins',
      severity: 'error',
      from: { path: '^src/(pipeline|loader)/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'floor-imports-only-core',
      comment: 'The shared floor (net, fs, log) imports only core, and none of the three imports another.',
      severity: 'error',
      from: { path: `^src/${floor}/` },
      to: { path: '^src/', pathNot: ['^src/core/', '^src/$1/'] },
    },
    {
      name: 'capabilities-import-core-ports-and-floor',
      comment:
        'A capability implements a port on the floor; it never imports a sibling capability or anything above.',
      severity: 'error',
      from: { path: `^src/${capabilities}/` },
      to: { path: '^src/', pathNot: ['^src/core/', '^src/ports\\.ts$', `^src/${floor}/`, '^src/$1/'] },
    },
    {
      name: 'agent-imports-no-effect',
      comment:
        'The agent composes the pipeline and the loader over the ports; the effects come in as capabilities.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: { path: '^src/', pathNot: ['^src/core/', '^src/ports\\.ts$', '^src/(pipeline|loader|agent)/'] },
    },
    {
      name: 'agent-no-node-builtins',
      comment: 'Only a hash (the config checksum): computation, not an effect.',
      severity: 'error',
      from: { path: '^src/agent/' },
      to: { dependencyTypes: ['core'], pathNot: '^crypto$' },
    },
    {
      name: 'only-the-wiring-builds-effects',
      comment:
        'Capabilities and the floor are reached only from wiring/, the faces (index.ts, testing/) and the process ' +
        'entries (cli.ts for the logger, demo/).',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: [
          `^src/${capabilities}/`,
          `^src/${floor}/`,
          '^src/(wiring|testing|demo)/',
          '^src/(index|cli)\\.ts$',
        ],
      },
      to: { path: `^src/${capabilities}/|^src/${floor}/` },
    },
    {
      name: 'nothing-imports-the-entries',
      comment: 'The process entry, the public face and the demo are tops: nothing in src/ imports them.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/demo/' },
      to: { path: ['^src/(index|cli)\\.ts$', '^src/demo/'] },
    },
    {
      name: 'wiring-is-above-capabilities-only',
      comment: 'wiring/ is imported by the command line and the public face, never by the rooms it wires.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/(command|wiring)/', '^src/index\\.ts$'] },
      to: { path: '^src/wiring/' },
    },
    {
      name: 'command-is-imported-by-the-entry-only',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/command/', '^src/(index|cli)\\.ts$'] },
      to: { path: '^src/command/' },
    },
    {
      name: 'only-demo-and-testing-import-testing',
      comment:
        'src/testing/ is the test kit (modelsync/testing): the library never depends on it; only the demo does.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/testing/', '^src/demo/'] },
      to: { path: '^src/testing/' },
    },
    {
      name: 'testing-kit-stands-alone',
      comment:
        'The kit (stand-in servers, kubelet emulator) may use core and the floor, never the agent or its wiring.',
      severity: 'error',
      from: { path: '^src/testing/' },
      to: { path: '^src/(agent|pipeline|loader|wiring|command|demo)/|^src/(index|cli)\\.ts$' },
    },
    {
      name: 'rooms-are-entered-by-their-face',
      comment:
        'From outside a room, only its face (index.ts) is imported: what outsiders may use is the face. ' +
        'core/ is open file by file; tests may reach inside.',
      severity: 'error',
      from: { path: '^src/([^/]+)/' },
      to: { path: `^src/${faced}/.+`, pathNot: ['^src/$1/', `^src/${faced}/index\\.ts$`] },
    },
    {
      name: 'root-files-enter-rooms-by-their-face',
      severity: 'error',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: `^src/${faced}/.+`, pathNot: `^src/${faced}/index\\.ts$` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
