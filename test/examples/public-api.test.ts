/** The package's public API (`modelsync`) as an integrator's own entry file uses it: what startAgent ends with. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lastValueFrom } from 'rxjs';
import {
  agentSettings,
  capabilities,
  createLogger,
  defaultAppConfig,
  ModelDirUnusable,
  ServerNotAnswering,
  startAgent,
  type AgentCapabilities,
  type AppConfig,
} from 'modelsync';
import { fixedConfigSource, startHttpServer } from 'modelsync/testing';
import { useTempDir } from '../helpers/temp-dir';

describe('the errors startAgent ends with, imported from modelsync', () => {
  const tmp = useTempDir('public-api');
  const log = createLogger('silent');

  const run = (config: AppConfig, serverWaitMs: number): Promise<unknown> => {
    const built = capabilities(config, log, {});
    if (built._tag === 'Left') throw new Error(built.left);
    const edges: AgentCapabilities = { ...built.right, configSource: fixedConfigSource('[]') };
    return lastValueFrom(
      startAgent(edges, {
        ...agentSettings(config, log),
        retry: { baseMs: 5, maxMs: 20, maxAttempts: 3 },
        serverWaitMs,
      }),
    );
  };

  it('tells a model server that never answered (ServerNotAnswering) from an unusable model dir (ModelDirUnusable)', async () => {
    // A server that answers every call 503: never an answer the start can use.
    const server = await startHttpServer((_request, response) => response.writeHead(503).end());
    try {
      const config: AppConfig = {
        ...defaultAppConfig,
        modelDir: join(tmp.path, 'models'),
        serverUrl: server.url,
      };
      await expect(run(config, 200)).rejects.toBeInstanceOf(ServerNotAnswering);

      await writeFile(join(tmp.path, 'not-a-dir'), 'a file');
      const unusable = { ...config, modelDir: join(tmp.path, 'not-a-dir') };
      await expect(run(unusable, 200)).rejects.toBeInstanceOf(ModelDirUnusable);
    } finally {
      await server.close();
    }
  });
});
