/**
 * `npm run demo`: the story (story.ts) against a stand-in V2 model server over its model dir; no cluster needed.
 * `npm run demo -- --server mlserver|triton|kserve` runs it against that real server, installed by
 * scripts/model-servers/ (as for the e2e tests), with an inference answer after each step: that launcher lives
 * beside the tests' real-server harness, compiled from a clone on demand.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runDemoStory } from './story';
import { startV2ModelServer } from '../testing';

const repoRoot = join(__dirname, '..', '..');

/** Builds and runs the real-server demo of a clone (test/real-servers/demo.ts); returns its exit code. */
const runWithRealServer = (kind: string): number => {
  const project = join(repoRoot, 'tsconfig.demo.json');
  if (!existsSync(project)) {
    process.stderr.write('demo: --server runs from a clone of modelsync (it needs its tests and scripts)\n');
    return 2;
  }
  // A dir of its own for each run, inside the clone (its node_modules resolve from there), removed after: two demos
  // at once (the e2e tests run them side by side) never read each other's half-written files.
  mkdirSync(join(repoRoot, '.demo-build'), { recursive: true });
  const outDir = mkdtempSync(join(repoRoot, '.demo-build', 'run-'));
  try {
    process.stdout.write(
      'demo: compiling the real-server launcher (test/real-servers/demo.ts) with tsc: about 15 s, more on a busy machine\n',
    );
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const built = spawnSync(process.execPath, [tsc, '-p', project, '--outDir', outDir], { stdio: 'inherit' });
    if (built.status !== 0) return built.status ?? 1;
    const launcher = join(outDir, 'test', 'real-servers', 'demo.js');
    return spawnSync(process.execPath, [launcher, kind], { stdio: 'inherit' }).status ?? 1;
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
};

const withStandIn = (): Promise<void> =>
  runDemoStory(join(__dirname, '..', 'cli.js'), async (modelDir) => {
    const server = await startV2ModelServer({ modelDir, loadDelayMs: 150 });
    return {
      title: 'model server stand-in (V2 repository API)',
      serverUrl: server.url,
      serverKind: 'generic',
      stock: async (storage) => {
        for (const model of ['iris-v1', 'iris-v2', 'mnist', 'wine']) {
          await mkdir(join(storage, model), { recursive: true });
          await writeFile(join(storage, model, 'model.joblib'), `${model.replace('-', ' ')} weights\n`);
        }
      },
      loaded: () => Promise.resolve([...server.loaded]),
      close: () => server.close(),
    };
  });

const serverFlag = process.argv.indexOf('--server');
if (serverFlag >= 0) {
  const kind = process.argv[serverFlag + 1] ?? '';
  if (!['mlserver', 'triton', 'kserve'].includes(kind)) {
    process.stderr.write(`demo: --server takes mlserver, triton or kserve, not "${kind}"\n`);
    process.exitCode = 2;
  } else process.exitCode = runWithRealServer(kind);
} else
  withStandIn().catch((error: unknown) => {
    process.stderr.write(`demo failed: ${String(error)}\n`);
    process.exitCode = 1;
  });
