/** Acceptance: the real agent process with 1,000 models at start-up and 200 rapid config updates on top. */
import { mkdirSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadJournalFileName } from '../../src/model-dir/load-journal';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startHttpServer } from '../../src/testing/http-server';
import { seededRandom } from '../../src/testing/seeded-random';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';

/** The seed of the config updates (which models change, go and come) and of their spacing. */
const seed = 0x5ca1ab1e;

const downloadCap = 4;
const loadCap = 2;

/**
 * HTTP storage where every path is a model: a tiny file whose content is its own path, answered after
 * `delayMs` so downloads overlap. Counts the requests open on the server side (arrival to response closed).
 */
const startStorage = async (delayMs: number) => {
  const stats = { gets: 0, inFlight: 0, maxInFlight: 0 };
  const server = await startHttpServer((req, res) => {
    stats.gets += 1;
    stats.inFlight += 1;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    let open = true;
    res.on('close', () => {
      if (open) stats.inFlight -= 1;
      open = false;
    });
    const body = new URL(req.url ?? '/', 'http://storage').pathname;
    setTimeout(() => {
      if (!res.destroyed) res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(body);
    }, delayMs);
  });
  return { url: server.url, stats, close: server.close };
};

let standIn: V2ModelServerStandIn | undefined;
let closeStorage: (() => Promise<void>) | undefined;

afterEach(async () => {
  await killAllCli();
  await closeStorage?.();
  closeStorage = undefined;
  await standIn?.close();
  standIn = undefined;
});
const tmp = useTempDir('scale');

describe('the agent process at scale', () => {
  it('converges within the download and load caps when 1,000 models start and 200 updates follow', async () => {
    const random = seededRandom(seed);
    const configDir = join(tmp.path, 'configs');
    const modelDir = join(tmp.path, 'models');
    mkdirSync(modelDir);
    const storage = await startStorage(5);
    closeStorage = storage.close;
    standIn = await startV2ModelServer({ modelDir, loadDelayMs: 2 });

    // name -> storage path (`/<name>/<revision>/model.bin`); the path is also the file's content.
    const config = new Map<string, string>();
    for (let i = 0; i < 1000; i++) config.set(`s${String(i).padStart(4, '0')}`, `/s${i}/r0/model.bin`);
    const write = (): void => {
      const entries = [...config].map(([modelName, path]) => ({
        modelName,
        modelSpec: { storageUri: `${storage.url}${path}`, framework: 'sklearn', memory: '10Mi' },
      }));
      atomicWrite(configDir, { 'models.json': JSON.stringify(entries) });
    };
    const pick = (): string => {
      const names = [...config.keys()];
      return names[Math.floor(random() * names.length)]!;
    };
    write();

    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'download-concurrency': downloadCap,
        'load-concurrency': loadCap,
        'retry-base-ms': 20,
        'retry-max-ms': 200,
      }),
    );
    await agent.waitForLog(() => true, 30_000);
    // 200 updates a few ms apart while the start-up sync runs: 3 specs change, 2 models go, 2 come.
    for (let update = 1; update <= 200; update++) {
      for (let i = 0; i < 3; i++) {
        const name = pick();
        config.set(name, `/${name}/r${update}/model.bin`);
      }
      for (let i = 0; i < 2; i++) config.delete(pick());
      for (const suffix of ['a', 'b']) config.set(`u${update}${suffix}`, `/u${update}${suffix}/r0/model.bin`);
      write();
      await sleep(2 + Math.floor(random() * 8));
    }

    const finalNames = [...config.keys()].sort();
    const loadedIsFinal = (): boolean =>
      standIn!.loaded.size === finalNames.length && finalNames.every((name) => standIn!.loaded.has(name));
    await agent.waitForLog('start-up sync complete; ready', 120_000);
    await waitFor(loadedIsFinal, 120_000, 'the loaded set to equal the last config');
    await agent.waitForQuiet(1500, 60_000);
    expect(loadedIsFinal()).toBe(true);

    expect(storage.stats.maxInFlight).toBeLessThanOrEqual(downloadCap);
    expect(standIn.maxConcurrentLoads).toBeLessThanOrEqual(loadCap);
    // Non-vacuity: the caps were reached, so they were what held the work back.
    expect(storage.stats.maxInFlight).toBeGreaterThan(1);
    expect(standIn.maxConcurrentLoads).toBe(loadCap);
    expect(standIn.loads.filter((load) => !load.complete)).toEqual([]);
    expect(agent.logs.filter((log) => log.msg === 'model failed')).toEqual([]);
    expect(agent.otherLines).toEqual([]);

    // The model dir holds exactly the last config's models, each its configured revision and nothing else.
    expect((await readdir(modelDir)).filter((e) => e !== loadJournalFileName).sort()).toEqual(finalNames);
    const wrong: string[] = [];
    for (const [name, path] of config) {
      const files = (await readdir(join(modelDir, name))).sort();
      const markers = files.filter((file) => file.startsWith('SUCCESS.'));
      const marker =
        markers.length === 1
          ? (JSON.parse(await readFile(join(modelDir, name, markers[0]!), 'utf8')) as { storageUri: string })
          : undefined;
      const content = files.includes('model.bin')
        ? await readFile(join(modelDir, name, 'model.bin'), 'utf8')
        : '';
      if (files.length !== 2 || marker?.storageUri !== `${storage.url}${path}` || content !== path)
        wrong.push(`${name}: ${files.join(' ')} marker=${marker?.storageUri ?? '-'} content=${content}`);
    }
    expect(wrong).toEqual([]);

    expect(await agent.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
  }, 240_000);
});
