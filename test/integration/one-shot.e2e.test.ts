/** Acceptance (issue #9): `--once` without `--dry-run` on the real CLI — sync the config as it is, then exit 0 or 1. */
import { readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { waitFor } from '../../src/testing/wait';
import { cliArgs, killAllCli, runCli, startCli } from '../helpers/cli-process';
import { closedPort, useHttpServers } from '../helpers/http-servers';
import { atLeast, type LogLine } from '../helpers/log-sink';
import { modelsJson } from '../helpers/fixtures';
import { useTempDir } from '../helpers/temp-dir';
import { resyncWorld, type ResyncWorld } from './resync-world';

let world: ResyncWorld;
// Declared before the temp dir's: hooks after a test run in the order declared, so the dir goes once no process
// writes in it any more (removed under a live CLI, it can fail ENOTEMPTY).
afterEach(async () => {
  await killAllCli();
  await world.close();
});
const tmp = useTempDir('one-shot');
const serve = useHttpServers();
beforeEach(async () => {
  world = await resyncWorld(tmp.path);
  await Promise.all(['a', 'b'].map((name) => world.addModel(name)));
});

const oneShot = (extra = {}) => runCli(cliArgs(world.flags({ once: true, ...extra })), { timeoutMs: 20_000 });

describe('modelsync --once (one-shot sync, real CLI)', () => {
  it('exits 0 with nothing on stdout once every model is loaded, and removes what the config does not list', async () => {
    world.server().preload('stray');
    world.writeConfig(['a', 'b']);
    const result = await oneShot();
    expect(result.code).toBe(0);
    expect(result.stdout.text).toBe('');
    expect([...world.server().loaded].sort()).toEqual(['a', 'b']);
    expect(
      result.stderr.lines.some((line) => line.includes('one-shot sync done: every model is loaded')),
    ).toBe(true);
  }, 30_000);

  it('exits 1 listing each model that failed on one stdout line (model, phase, kind, reason), loading the rest', async () => {
    world.server().failNextLoads(1, 500);
    atomicWrite(world.configDir, {
      'models.json': modelsJson({
        a: join(world.storageDir, 'a'),
        missing: join(world.storageDir, 'missing'),
      }),
    });
    const result = await oneShot({ 'max-attempts': 1 });
    expect(result.code).toBe(1);
    const failures = result.stdout.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(failures.map((failure) => failure['model']).sort()).toEqual(['a', 'missing']);
    expect(failures.find((failure) => failure['model'] === 'a')).toMatchObject({
      phase: 'Failed',
      errorKind: 'http-status',
      reason: expect.stringContaining('HTTP 500') as unknown,
    });
    expect(failures.find((failure) => failure['model'] === 'missing')).toMatchObject({ phase: 'Failed' });
    expect(typeof failures.find((failure) => failure['model'] === 'missing')?.['errorKind']).toBe('string');
  }, 30_000);

  it("shows a failed model's storage URI in its stdout line only as the logs do: no query or fragment (stdout often lands in CI logs)", async () => {
    const refusing = await serve((request, response) => {
      // The server quotes the request's target back, query and all, as many error pages do.
      response.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${request.url ?? ''}`);
    });
    const signed = `${refusing.url}/models/m.bin?X-Amz-Signature=5ec7e7a11ce0ffee&token=t0ken-value-1#frag-value`;
    atomicWrite(world.configDir, {
      'models.json': JSON.stringify([{ modelName: 'signed', modelSpec: { storageUri: signed } }]),
    });
    const result = await oneShot({ 'max-attempts': 1 });
    expect(result.code).toBe(1);
    expect(result.stdout.lines).toHaveLength(1);
    const line = JSON.parse(result.stdout.lines[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ model: 'signed', phase: 'Failed' });
    expect(line['reason']).toContain('/models/m.bin');
    expect(Object.keys(line).sort()).toEqual(['errorKind', 'model', 'phase', 'reason']);
    for (const secret of ['5ec7e7a11ce0ffee', 't0ken-value-1', 'frag-value'])
      expect(result.stdout.text).not.toContain(secret);
  }, 30_000);

  it('writes pretty log lines with --log-format pretty, and JSON lines by default when stderr is not a terminal', async () => {
    world.writeConfig(['a']);
    const pretty = await oneShot({ 'log-format': 'pretty' });
    expect(pretty.code).toBe(0);
    const done = pretty.stderr.lines.find((text) => text.includes('one-shot sync done'));
    expect(done).toMatch(/INFO.*one-shot sync done: every model is loaded/);
    expect(() => JSON.parse(done!) as unknown).toThrow();
    const json = await oneShot({ 'log-format': 'auto' });
    expect(json.stderr.lines.every((text) => text.startsWith('{'))).toBe(true);
  }, 30_000);

  it('exits 1 and changes nothing when the config cannot be used', async () => {
    world.server().preload('kept');
    atomicWrite(world.configDir, { 'models.json': '[{"modelName": "a"' });
    const result = await oneShot();
    expect(result.code).toBe(1);
    expect(result.stderr.text).toContain('one-shot sync: no usable config; nothing was changed');
    expect([...world.server().loaded]).toEqual(['kept']);
  }, 30_000);

  it.each([
    ['refuses every connection', async (): Promise<string> => `http://127.0.0.1:${await closedPort()}`],
    [
      'accepts connections and never answers',
      async (): Promise<string> => (await serve(() => undefined)).url,
    ],
  ])(
    'exits 3 after --server-wait-timeout with one error line and nothing loaded when the model server %s',
    async (_what, serverUrl) => {
      world.writeConfig(['a']);

      const result = await runCli(
        cliArgs(
          world.flags({
            once: true,
            'server-url': await serverUrl(),
            'server-wait-timeout': '2s',
            'request-timeout-ms': 500,
          }),
        ),
        { timeoutMs: 30_000 },
      );

      expect(result.code).toBe(3);
      expect(result.stdout.text).toBe('');
      const errors = result.stderr.lines.map((line) => JSON.parse(line) as LogLine).filter(atLeast('error'));
      expect(errors).toEqual([
        expect.objectContaining({
          msg: 'one-shot sync: the model server did not answer within --server-wait-timeout; nothing was loaded',
          waitedMs: expect.any(Number) as unknown,
        }),
      ]);
      expect(errors[0]!['waitedMs']).toBeGreaterThanOrEqual(1900);
    },
    40_000,
  );

  // SIGHUP too: one-shot mode has no resync for it to start, and its default action killed the process.
  it.each(['SIGTERM', 'SIGINT', 'SIGHUP'] as const)(
    'exits 1, never 0, when %s stops it before every model is loaded',
    async (signal) => {
      world.writeConfig(['a']);
      const cli = startCli(
        cliArgs(world.flags({ once: true, 'server-url': `http://127.0.0.1:${await closedPort()}` })),
      );
      await cli.waitForLog('model server not answering yet; waiting for it', 20_000);

      const exit = await cli.signalAndWait(signal);

      expect(exit).toEqual({ code: 1, signal: null });
      expect(world.server().loaded.size).toBe(0);
      const errors = cli.stderr.lines.map((line) => JSON.parse(line) as LogLine).filter(atLeast('error'));
      expect(errors).toEqual([
        expect.objectContaining({ msg: expect.stringContaining('stopped by a signal') as unknown }),
      ]);
    },
    40_000,
  );
});

// A signal mid-download unsubscribed at once and exited: the aborted download's staging dir (and its bytes so far)
// stayed in the model dir, shared with the model server, until the next start.
it('leaves no staging dir in the model dir when SIGTERM stops it mid-download, and still exits 1', async () => {
  const trickle = await serve((_request, response) => {
    response.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': String(1 << 30),
    });
    response.write(Buffer.alloc(64 * 1024));
  });
  atomicWrite(world.configDir, {
    'models.json': JSON.stringify([
      { modelName: 'big', modelSpec: { storageUri: `${trickle.url}/big.bin` } },
    ]),
  });
  const cli = startCli(cliArgs(world.flags({ once: true })));
  await cli.waitForLog((log) => log.msg === 'model downloading', 20_000);
  await waitFor(
    async () => (await readdir(world.modelDir)).some((name) => name.startsWith('.tmp-big-')),
    20_000,
    'the staging dir',
  );

  expect(await cli.signalAndWait('SIGTERM', 30_000)).toEqual({ code: 1, signal: null });
  expect((await readdir(world.modelDir)).filter((name) => name.startsWith('.tmp-'))).toEqual([]);
}, 60_000);

describe('a model dir that cannot be used at start (real CLI)', () => {
  // A bad --model-dir or a broken volume, not a bug: one error line naming the dir and what is wrong, exit 1.
  it.each([
    ['a file', 'once', { once: true }],
    ['a file', 'sync mode', {}],
    ['a dangling link', 'once', { once: true }],
    ['a dangling link', 'sync mode', {}],
  ] as const)(
    'exits 1 with one error line naming the dir when it is %s (%s)',
    async (kind, _mode, extra) => {
      const modelDir = join(tmp.path, 'unusable');
      if (kind === 'a file') await writeFile(modelDir, '');
      else await symlink(join(tmp.path, 'nowhere'), modelDir);
      world.writeConfig(['a']);
      const result = await runCli(cliArgs(world.flags({ ...extra, 'model-dir': modelDir })), {
        timeoutMs: 20_000,
      });
      expect(result.code).toBe(1);
      const errors = result.stderr.lines.map((line) => JSON.parse(line) as LogLine).filter(atLeast('error'));
      expect(errors).toEqual([
        expect.objectContaining({
          level: 'error',
          msg: expect.stringContaining('cannot start: the model dir cannot be used') as unknown,
          modelDir,
          problem: kind === 'a file' ? 'not a dir' : 'missing, or a dangling link',
        }),
      ]);
      expect(result.stderr.text).not.toContain('unexpected');
      expect(world.server().loaded.size).toBe(0);
    },
    30_000,
  );
});
