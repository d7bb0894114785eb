/** The CLI's sync and one-shot modes in process: the production capabilities, the start-up log line, and refusing bad headers. */
import { join } from 'node:path';
import { either as E } from 'fp-ts';
import pino from 'pino';
import { firstValueFrom, NEVER, Subject, toArray } from 'rxjs';
import { defaultAppConfig, type AppConfig } from '../../src/core/flags/app-config';
import { syncMode } from '../../src/command/modes';
import { oneShotMode } from '../../src/command/one-shot-mode';
import { packageVersion } from '../../src/command/package-version';
import { capabilities } from '../../src/wiring/capabilities';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { writeFiles } from '../helpers/file-tree';
import { modelsJson } from '../helpers/fixtures';
import { levelValue, LogSink } from '../helpers/log-sink';
import { freePort } from '../integration/surface-kit';
import { useTempDir } from '../helpers/temp-dir';

const secretHeaders = { 'models.example.com-headers': 'Bearer s3cr3t-token' };

/** The agent's config on `root`'s configs and models dirs, loading into `standIn`, local storage under `root`. */
const configIn = (root: string, standIn: V2ModelServerStandIn): AppConfig => ({
  ...defaultAppConfig,
  configDir: join(root, 'configs'),
  modelDir: join(root, 'models'),
  serverUrl: standIn.url,
  localStorageRoots: [root],
});

describe('syncMode', () => {
  const tmp = useTempDir('modes');
  let standIn: V2ModelServerStandIn;
  let config: AppConfig;
  beforeEach(async () => {
    standIn = await startV2ModelServer({ modelDir: join(tmp.path, 'models') });
    // The surface on, on a port of its own: 9081 may be another agent's on this machine (EADDRINUSE).
    config = { ...configIn(tmp.path, standIn), httpPort: await freePort() };
  });
  afterEach(() => standIn.close());

  it('logs the version when it starts, then syncs the models on the production edges', async () => {
    await writeFiles(join(tmp.path, 'storage', 'm1'), { 'model.bin': 'm1' });
    atomicWrite(config.configDir, { 'models.json': modelsJson({ m1: join(tmp.path, 'storage', 'm1') }) });
    const sink = new LogSink();
    const subscription = syncMode(config, pino({ level: 'info' }, sink), {}).subscribe();
    try {
      await waitFor(() => sink.withMessage('ready').length > 0, 10_000, 'the ready log line');
    } finally {
      subscription.unsubscribe();
    }
    expect(sink.lines[0]).toMatchObject({
      msg: 'modelsync starting',
      version: packageVersion,
      serverUrl: standIn.url,
      protocol: 'v2',
    });
    expect([...standIn.loaded]).toEqual(['m1']);
  });

  it('logs a resync asked for by SIGHUP, whatever it finds to repair', async () => {
    // With nothing to repair a SIGHUP left no trace an operator could see (only a counter of /metrics).
    await writeFiles(join(tmp.path, 'storage', 'm1'), { 'model.bin': 'm1' });
    atomicWrite(config.configDir, { 'models.json': modelsJson({ m1: join(tmp.path, 'storage', 'm1') }) });
    const sink = new LogSink();
    const resync$ = new Subject<void>();
    const signals = { shutdown$: NEVER, resync$ };
    const subscription = syncMode(config, pino({ level: 'info' }, sink), {}, signals).subscribe();
    try {
      await waitFor(() => sink.withMessage('ready').length > 0, 10_000, 'the ready log line');
      resync$.next();
      await waitFor(() => sink.withMessage('resync asked for').length > 0, 10_000, 'the resync line');
    } finally {
      subscription.unsubscribe();
    }
    expect(sink.withMessage('resync asked for')[0]).toMatchObject({ level: 30, signal: 'SIGHUP' });
  });

  // An address the host does not have was logged as `cannot serve the HTTP surface (--http-port)`: the wrong flag.
  it('exits 1 when the surface cannot be bound, one error line naming the address and both of its settings', async () => {
    const sink = new LogSink();
    const unbound = { ...config, httpHost: '192.0.2.1' }; // TEST-NET-1: no host has it
    const outputs = await firstValueFrom(syncMode(unbound, pino(sink), {}).pipe(toArray()));
    expect(outputs).toEqual([{ _tag: 'Exit', code: 1 }]);
    const errors = sink.lines.filter((line) => levelValue(line) >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      host: '192.0.2.1',
      port: config.httpPort,
      msg: 'cannot serve the HTTP surface; check --http-port (KServe: --port) and --http-host',
    });
  });

  it('exits 2 on malformed download headers, naming the variable but never quoting its value', async () => {
    const sink = new LogSink();
    const outputs = await firstValueFrom(syncMode(config, pino(sink), secretHeaders).pipe(toArray()));
    expect(outputs).toEqual([{ _tag: 'Exit', code: 2 }]);
    const logged = JSON.stringify(sink.lines);
    expect(logged).toContain('models.example.com-headers');
    expect(logged).not.toContain('s3cr3t');
  });
});

describe('oneShotMode', () => {
  const tmp = useTempDir('one-shot-mode');
  let standIn: V2ModelServerStandIn;
  let config: AppConfig;
  beforeEach(async () => {
    standIn = await startV2ModelServer({ modelDir: join(tmp.path, 'models') });
    config = { ...configIn(tmp.path, standIn), once: true };
    await writeFiles(join(tmp.path, 'storage', 'm1'), { 'model.bin': 'm1' });
    atomicWrite(config.configDir, { 'models.json': modelsJson({ m1: join(tmp.path, 'storage', 'm1') }) });
  });
  afterEach(() => standIn.close());

  it('exits 0 once every listed model is loaded and every unlisted one unloaded', async () => {
    standIn.preload('stray-1', 'stray-2');
    const outputs = await firstValueFrom(oneShotMode(config, pino({ level: 'silent' }), {}).pipe(toArray()));
    expect(outputs).toEqual([{ _tag: 'Exit', code: 0 }]);
    expect([...standIn.loaded]).toEqual(['m1']);
  });

  it('exits 1, never 0, when the server lists more unlisted models than --max-unlisted-unloads lets it unload', async () => {
    standIn.preload('stray-1', 'stray-2', 'stray-3');
    const sink = new LogSink();
    const outputs = await firstValueFrom(
      oneShotMode({ ...config, maxUnlistedUnloads: 1 }, pino(sink), {}).pipe(toArray()),
    );
    expect(outputs.at(-1)).toEqual({ _tag: 'Exit', code: 1 });
    expect(standIn.loaded.has('m1')).toBe(true);
    expect(standIn.loaded.size).toBe(3);
    expect(sink.withMessage('one-shot sync done: some models are not loaded')).toHaveLength(0);
    expect(sink.lines.filter((line) => line['level'] === 50)).toEqual([
      expect.objectContaining({ left: 2, maxUnlistedUnloads: 1 }),
    ]);
  });
  it('names the ConfigMap it reads in its start line with --source kube-api, and no config dir it does not read', async () => {
    const sink = new LogSink();
    const kubeApi = { ...config, source: 'kube-api' as const, configmap: 'models', namespace: 'serving' };
    const subscription = oneShotMode(kubeApi, pino(sink), { KUBECONFIG: join(tmp.path, 'none') }).subscribe();
    try {
      await waitFor(
        () => sink.withMessage('modelsync one-shot sync starting').length > 0,
        10_000,
        'the start line',
      );
    } finally {
      subscription.unsubscribe();
    }
    const [start] = sink.withMessage('modelsync one-shot sync starting');
    expect(start).toMatchObject({ source: 'kube-api', configmap: 'models', namespace: 'serving' });
    expect(start).not.toHaveProperty('configDir');
  });
});

describe('capabilities', () => {
  it('is a Left naming the malformed headers variable without its value', () => {
    const built = capabilities(defaultAppConfig, pino({ level: 'silent' }), secretHeaders);
    expect(E.isLeft(built) && built.left).toContain('models.example.com-headers is not valid JSON');
    expect(JSON.stringify(built)).not.toContain('s3cr3t');
  });

  it('builds every edge the agent needs', () => {
    const built = capabilities(defaultAppConfig, pino({ level: 'silent' }), {
      'models.example.com-headers': '{"Authorization":"Bearer x"}',
    });
    expect(E.isRight(built) && Object.keys(built.right).sort()).toEqual([
      'configSource',
      'download',
      'journal',
      'servedSchemes',
      'server',
      'store',
    ]);
  });
});
