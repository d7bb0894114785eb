/**
 * `npm run demo -- --server <kind>`: the demo's story (src/demo/story.ts) against the real server `kind`, started
 * as the tests start it (from its deploy overlay, on free ports; it alone installed first when it is not yet), with the
 * fixture models in storage (iris-v1, mnist: the v1 fixture; iris-v2, wine: v2), printing each loaded model's
 * inference answer (1 for v1, 2 for v2) after each step. Compiled from a clone by dist/demo/demo.js.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { ensureRealServers } from './global-setup';
import { fixtureModel, infer, inferredVersion, loadedModels } from './models';
import { installedServer, realServerKinds, repoRoot, type RealServerKind } from './paths';
import { startRealServer } from './servers';
import { runDemoStory } from '../../src/demo/story';

const titles: Record<RealServerKind, string> = {
  triton: 'Triton',
  mlserver: 'MLServer',
  kserve: 'the KServe model server',
};

const main = async (kind: RealServerKind): Promise<void> => {
  // Only the server the story runs: all three would take minutes more and a GB of disk.
  ensureRealServers([kind], (title) => void process.stdout.write(`demo: ${title}\n`));
  await runDemoStory(join(repoRoot, 'dist', 'cli.js'), async (modelDir) => {
    const server = await startRealServer(kind, { modelDir });
    return {
      title: `${titles[kind]} ${installedServer(kind).version} (from deploy/overlays/${kind})`,
      serverUrl: server.url,
      serverKind: kind,
      stock: (storage) => {
        for (const [model, variant] of [
          ['iris-v1', 'v1'],
          ['iris-v2', 'v2'],
          ['mnist', 'v1'],
          ['wine', 'v2'],
        ] as const)
          cpSync(fixtureModel(kind, variant), join(storage, model), { recursive: true });
        return Promise.resolve();
      },
      loaded: () => loadedModels(server),
      infer: async (name) => {
        const answer = await infer(server, name);
        const version = Object.entries(inferredVersion).find(([, value]) => value === answer)?.[0];
        return `answers ${answer}${version === undefined ? '' : ` (the ${version} model)`}`;
      },
      close: async () => void (await server.stop()),
    };
  });
};

const kind = process.argv[2] as RealServerKind;
if (!realServerKinds.includes(kind)) {
  process.stderr.write(`demo: the real servers are ${realServerKinds.join(', ')}, not "${String(kind)}"\n`);
  process.exitCode = 2;
} else
  main(kind).catch((error: unknown) => {
    process.stderr.write(
      `demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
