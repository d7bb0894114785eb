/**
 * Acceptance of /healthz on the real process: a quiet watch is alive, a stalled one (its check of the config dir
 * hangs, as on a hung mount) flips it to 503 while /readyz holds, and a watch that moves again brings it back.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { surfacePaths } from '../../src/surface/http-surface';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';
import { freePort, get, getJson } from './surface-kit';

let standIn: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await killAllCli();
  await standIn?.close();
  standIn = undefined;
});
const tmp = useTempDir('surface-health');

// Preloaded into the agent: while the flag file exists, a stat of the config dir hangs, as on a hung NFS mount
// (the watch's periodic check never returns); once the flag is gone, the held stats go ahead.
const hangConfigDirStat = `
const fs = require('fs');
const fsp = require('fs/promises');
const stat = fsp.stat;
const held = [];
const hung = () => fs.existsSync(process.env.HANG_FLAG);
fsp.stat = function (path, ...rest) {
  if (!hung() || String(path) !== process.env.HANG_DIR) return stat.call(this, path, ...rest);
  return new Promise((resolve, reject) => held.push(() => stat.call(fsp, path, ...rest).then(resolve, reject)));
};
setInterval(() => {
  if (!hung()) for (const release of held.splice(0)) release();
}, 50).unref();
`;

describe('/healthz of the agent process', () => {
  it('stays 200 on a quiet watch, turns 503 while the watch is stuck on a hung mount, and 200 once it is not', async () => {
    const configDir = join(tmp.path, 'configs');
    const modelDir = join(tmp.path, 'models');
    const flag = join(tmp.path, 'hang');
    const preload = join(tmp.path, 'hang-config-dir-stat.js');
    writeFileSync(preload, hangConfigDirStat);
    mkdirSync(modelDir);
    atomicWrite(configDir, { 'models.json': '[]' });
    standIn = await startV2ModelServer({ modelDir });
    const port = await freePort();
    const stallMs = 1000;
    const agent = startCli(
      cliArgs({
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'http-port': port,
        'watch-stall-ms': stallMs,
      }),
      { env: { NODE_OPTIONS: `--require ${preload}`, HANG_FLAG: flag, HANG_DIR: configDir } },
    );
    await agent.waitForLog('start-up sync complete; ready', 10_000);
    const healthz = async (): Promise<number> => (await get(port, surfacePaths.healthz)).status;

    await sleep(2.5 * stallMs); // nothing changes: quiet, not dead
    expect(await healthz()).toBe(200);

    writeFileSync(flag, '');
    await waitFor(async () => (await healthz()) === 503, 10_000, '/healthz to turn 503');
    const stalled = await getJson(port, surfacePaths.healthz);
    expect(stalled.json).toMatchObject({ status: 'stalled', ok: false });
    expect(String(stalled.json['reason'])).toContain('config watch has made no progress');
    expect((await get(port, surfacePaths.readyz)).status).toBe(200);

    rmSync(flag);
    await waitFor(async () => (await healthz()) === 200, 10_000, '/healthz to turn 200 again');
    expect((await get(port, surfacePaths.readyz)).status).toBe(200);
  }, 40_000);
});
