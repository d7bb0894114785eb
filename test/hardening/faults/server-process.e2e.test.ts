/**
 * Faults suite, model server (the real process): a server that is not there at start, that dies mid-sync and
 * comes back, and that hangs past the timeouts. `dist/cli.js` must wait, retry and converge, and stay up.
 */
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { waitFor } from '../../../src/testing/wait';
import { cliArgs, killAllCli, startCli, type CliProcess } from '../../helpers/cli-process';
import { writeFiles } from '../../helpers/file-tree';
import { closedPort } from '../../helpers/http-servers';
import { modelsJson } from '../../helpers/fixtures';
import type { LogLine } from '../../helpers/log-sink';
import { useTempDir } from '../../helpers/temp-dir';

afterEach(killAllCli);
const standIns: V2ModelServerStandIn[] = [];
afterEach(async () => {
  await Promise.all(standIns.splice(0).map((standIn) => standIn.close()));
});
const tmp = useTempDir('faults-server');

/** A V2 stand-in on `port` (any free one when 0), closed after the test. */
const standInOn = async (port = 0, loadDelayMs = 0): Promise<V2ModelServerStandIn> => {
  const standIn = await startV2ModelServer({ port, loadDelayMs });
  standIns.push(standIn);
  return standIn;
};

/** models.json text for `names`, each a local dir holding one file. */
const localModels = async (names: ReadonlyArray<string>): Promise<string> => {
  const uris: Record<string, string> = {};
  for (const name of names) {
    await writeFiles(join(tmp.path, 'storage', name), { 'model.pt': name });
    uris[name] = join(tmp.path, 'storage', name);
  }
  return modelsJson(uris);
};

const configDir = (): string => join(tmp.path, 'configs');

/** The CLI on the temp dirs, fast retries, talking to `serverUrl`. */
const startAgainst = (serverUrl: string, flags: Record<string, string | number> = {}): CliProcess =>
  startCli(
    cliArgs({
      'config-dir': configDir(),
      'model-dir': join(tmp.path, 'models'),
      'local-storage-roots': tmp.path,
      'server-url': serverUrl,
      'retry-base-ms': 20,
      'retry-max-ms': 100,
      'max-attempts': 100,
      ...flags,
    }),
  );

const statusLines = (cli: CliProcess, msg: string): LogLine[] => cli.logs.filter((log) => log.msg === msg);

describe('the real process against a model server that is not there, dies or hangs', () => {
  it('waits for a server that is down at start, saying so, then syncs once it appears', async () => {
    const port = await closedPort();
    atomicWrite(configDir(), { 'models.json': await localModels(['a', 'b']) });
    const cli = startAgainst(`http://127.0.0.1:${port}`);
    await cli.waitForLog(
      (log) => log.msg === 'model server not answering yet; waiting for it' && log['attempt'] === 3,
    );
    const wait = statusLines(cli, 'model server not answering yet; waiting for it')[0]!;
    expect(wait['err']).toMatchObject({ kind: 'network' });
    expect((wait['err'] as { message: string }).message).toContain('ECONNREFUSED');

    const standIn = await standInOn(port);
    await cli.waitForLog('start-up sync complete; ready', 20_000);
    expect([...standIn.loaded].sort()).toEqual(['a', 'b']);
    expect(await cli.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('retries loads cut off and refused while the server dies mid-sync, and converges once it is back', async () => {
    const first = await standInOn(0, 150);
    const names = Array.from({ length: 8 }, (_, i) => `m${i}`);
    atomicWrite(configDir(), { 'models.json': await localModels(names) });
    const cli = startAgainst(first.url, { 'load-concurrency': 2 });
    await waitFor(() => first.loaded.size >= 2, 20_000, 'the first loads');
    // Dies with loads in flight (their connections are dropped), stays down, comes back with what it had.
    await first.close();
    await cli.waitForLog(
      (log) => log.msg === 'model step failed; retrying' && log['errorKind'] === 'network',
    );
    await waitFor(
      () => statusLines(cli, 'model step failed; retrying').length >= 4,
      10_000,
      'refused retries',
    );
    const second = await standInOn(Number(new URL(first.url).port), 20);
    second.preload(...first.loaded);
    await cli.waitForLog('start-up sync complete; ready', 30_000);
    expect([...second.loaded].sort()).toEqual(names);
    expect(statusLines(cli, 'model failed')).toEqual([]);
    expect(cli.child.exitCode).toBeNull();
    expect(await cli.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('times out a load and an unload that hang, retries them, and keeps going while one model never loads', async () => {
    const standIn = await standInOn();
    standIn.injectFault('load', { hang: true }, 1);
    atomicWrite(configDir(), { 'models.json': await localModels(['a', 'b']) });
    const cli = startAgainst(standIn.url, {
      'load-timeout-ms': 300,
      'request-timeout-ms': 300,
      'max-attempts': 3,
    });
    await cli.waitForLog('start-up sync complete; ready', 20_000);
    expect([...standIn.loaded].sort()).toEqual(['a', 'b']);
    const timedOut = statusLines(cli, 'model step failed; retrying')[0]!;
    expect(timedOut).toMatchObject({ errorKind: 'timeout' });
    expect(timedOut['reason']).toMatch(
      /^model server load of "[ab]" \(http:\/\/127\.0\.0\.1:\d+\) timed out after 300 ms$/,
    );

    standIn.injectFault('unload', { hang: true }, 1);
    atomicWrite(configDir(), { 'models.json': await localModels(['a']) });
    await cli.waitForLog((log) => log.msg === 'model removed' && log['model'] === 'b', 10_000);
    expect(statusLines(cli, 'model step failed; retrying').at(-1)).toMatchObject({
      model: 'b',
      errorKind: 'timeout',
    });

    standIn.injectFault('load', { hang: true }, Infinity);
    atomicWrite(configDir(), { 'models.json': await localModels(['a', 'c']) });
    const failed = await cli.waitForLog('model failed', 10_000);
    expect(failed).toMatchObject({ model: 'c', errorKind: 'timeout', attempt: 3 });
    standIn.injectFault('load', { hang: true }, 0);
    atomicWrite(configDir(), { 'models.json': await localModels(['a', 'd']) });
    await cli.waitForLog((log) => log.msg === 'model loaded' && log['model'] === 'd', 10_000);
    expect([...standIn.loaded].sort()).toEqual(['a', 'd']);
    expect(await cli.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
