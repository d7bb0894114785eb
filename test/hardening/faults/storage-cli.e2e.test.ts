/**
 * Storage limits on the real process (`dist/cli.js`, flags as an operator sets them): /proc refused whatever the
 * roots, an endless body capped for good, a trickle dropped; the process stays up and loads the healthy model.
 */
import { loadJournalFileName } from '../../../src/model-dir/load-journal';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { writeRepeated } from '../../../src/testing/http-server';
import { waitFor } from '../../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../../helpers/cli-process';
import { listTree, writeFiles } from '../../helpers/file-tree';
import { useHttpServers } from '../../helpers/http-servers';
import { trickle } from '../../helpers/raw-http';
import type { LogLine } from '../../helpers/log-sink';
import { useTempDir } from '../../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('storage-cli');

describe('storage limits on the real process', () => {
  const serve = useHttpServers();
  let standIn: V2ModelServerStandIn | undefined;
  afterEach(() => standIn?.close());

  it('refuses /proc/self/environ, caps an endless body and drops a trickle, for good or retried, and loads the rest', async () => {
    const configDir = join(tmp.path, 'configs');
    const modelDir = join(tmp.path, 'models');
    const pvc = join(tmp.path, 'pvc');
    mkdirSync(modelDir);
    await writeFiles(pvc, { 'good/model.bin': 'weights' });
    standIn = await startV2ModelServer({ modelDir });
    const { url } = await serve((req, res) => {
      if (req.url !== '/endless.bin') return trickle(Buffer.from('x'), 20, 1_000_000)(req, res);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      writeRepeated(res, Buffer.alloc(64 * 1024), 2 ** 40);
    });
    const models = {
      environ: '/proc/self/environ',
      endless: `${url}/endless.bin`,
      trickle: `${url}/trickle.bin`,
      good: join(pvc, 'good'),
    };
    atomicWrite(configDir, {
      'models.json': JSON.stringify(
        Object.entries(models).map(([modelName, storageUri]) => ({ modelName, modelSpec: { storageUri } })),
      ),
    });

    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'local-storage-roots': '/',
        'max-model-bytes': '1Mi',
        'min-download-rate': '1Ki',
        'min-rate-window-ms': '500',
        'retry-base-ms': 10,
        'retry-max-ms': 20,
        'max-attempts': 2,
      }),
      { env: { MODELSYNC_PLANTED: 'planted-secret-value' } },
    );
    const failed = (model: string) => (log: LogLine) =>
      log['msg'] === 'model failed' && log['model'] === model;
    const environ = await agent.waitForLog(failed('environ'), 20_000);
    const endless = await agent.waitForLog(failed('endless'), 20_000);
    const trickled = await agent.waitForLog(failed('trickle'), 20_000);
    await waitFor(() => standIn!.loaded.has('good'), 20_000, 'the good model to load');

    expect(environ).toMatchObject({ errorKind: 'refused', attempt: 1 });
    expect(environ['reason']).toContain('it lies under /proc');
    expect(endless).toMatchObject({ errorKind: 'too-large', attempt: 1 });
    expect(endless['reason']).toContain('(--max-model-bytes)');
    expect(trickled).toMatchObject({ errorKind: 'timeout', attempt: 2 });
    expect(trickled['reason']).toContain('too slow');
    expect([...standIn.loaded]).toEqual(['good']);
    // Only the good model and the load journal: nothing partial of the refused, capped or trickled ones.
    expect((await listTree(modelDir)).filter((entry) => !entry.startsWith('good/SUCCESS.'))).toEqual([
      loadJournalFileName,
      'good/',
      'good/model.bin',
    ]);
    expect(agent.stderr.text).not.toContain('planted-secret-value');
    expect(agent.otherLines).toEqual([]);
  });
});
