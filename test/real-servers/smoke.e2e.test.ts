/**
 * The real-server harness itself, on the real Triton, MLServer and KServe model servers run from their deploy
 * overlays: a fixture loaded by name is served (v1, then v2 swapped in), unloaded and gone; the broken fixtures
 * fail to load; the readiness path the overlay probes stays 200 through all of it; stopping leaves no process,
 * shm file or temp dir behind.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureRealServers } from './global-setup';
import { httpCall } from './http';
import {
  copyFixture,
  infer,
  inferredVersion,
  loadModel,
  ServerAnswerError,
  unloadModel,
  waitUnloaded,
} from './models';
import {
  groupMembers,
  realServerKinds,
  startRealServer,
  type RealServer,
  type RealServerKind,
} from './servers';

// Longer than a start's own deadline (startRealServer: 60 s to ready), so a slow start fails with the server's
// output rather than jest's bare hook timeout.
jest.setTimeout(180_000);

/** How each server answers a load of each broken fixture (FINDINGS.md §3–5). */
const failedLoad: Record<RealServerKind, { 'bad-config': number; 'raise-on-load': number }> = {
  triton: { 'bad-config': 500, 'raise-on-load': 400 },
  mlserver: { 'bad-config': 404, 'raise-on-load': 500 },
  kserve: { 'bad-config': 503, 'raise-on-load': 503 },
};

const servers = new Map<RealServerKind, RealServer>();
const modelDirs: string[] = [];

// The e2e project's globalSetup installs them; this makes the file pass where that is not wired (a no-op then).
beforeAll(ensureRealServers, 15 * 60_000);

beforeAll(async () => {
  // All three at once: the harness must cope with servers starting side by side.
  await Promise.all(
    realServerKinds.map(async (kind) => {
      const modelDir = await mkdtemp(join(tmpdir(), `modelsync-smoke-${kind}-`));
      modelDirs.push(modelDir);
      servers.set(kind, await startRealServer(kind, { modelDir }));
    }),
  );
});

afterAll(async () => {
  await Promise.all([...servers.values()].map((server) => server.stop()));
  await Promise.all(modelDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

const ready = async (server: RealServer): Promise<number> =>
  (await httpCall('GET', `${server.url}${server.overlay.readinessPath}`)).status;

describe.each(realServerKinds)('%s from its overlay', (kind) => {
  const server = (): RealServer => servers.get(kind)!;

  it('serves a fixture loaded by name: v1, then v2 in its place; unloaded, it is gone', async () => {
    const s = server();
    copyFixture(kind, 'v1', s.modelDir, 'm');
    expect((await loadModel(s, 'm')).status).toBe(200);
    expect(await infer(s, 'm')).toBe(inferredVersion.v1);

    await rm(join(s.modelDir, 'm'), { recursive: true });
    copyFixture(kind, 'v2', s.modelDir, 'm');
    expect((await loadModel(s, 'm')).status).toBe(200);
    expect(await infer(s, 'm')).toBe(inferredVersion.v2);

    expect((await unloadModel(s, 'm')).status).toBe(200);
    await waitUnloaded(s, 'm');
    await expect(infer(s, 'm')).rejects.toBeInstanceOf(ServerAnswerError);
  });

  it('fails to load the broken fixtures, and stays ready', async () => {
    const s = server();
    for (const variant of ['bad-config', 'raise-on-load'] as const) {
      copyFixture(kind, variant, s.modelDir, variant);
      const answer = await loadModel(s, variant);
      expect({ variant, status: answer.status }).toEqual({ variant, status: failedLoad[kind][variant] });
      if (variant === 'raise-on-load') expect(answer.body).toContain('raise-on-load: boom');
    }
    expect(await ready(s)).toBe(200);
  });

  if (kind === 'triton')
    it('answers the unload of slow-unload before the model is gone, which the index then tells', async () => {
      const s = server();
      copyFixture(kind, 'slow-unload', s.modelDir, 'slow');
      expect((await loadModel(s, 'slow')).status).toBe(200);
      expect(await infer(s, 'slow')).toBe(inferredVersion['slow-unload']);
      const sent = Date.now();
      expect((await unloadModel(s, 'slow')).status).toBe(200);
      const answeredMs = Date.now() - sent;
      await waitUnloaded(s, 'slow');
      expect(Date.now() - sent - answeredMs).toBeGreaterThan(1_500);
    });

  it('stops on SIGTERM, leaving no process, shm file or temp dir', async () => {
    const s = server();
    const { pid } = s;
    const { cwd } = s.spec;
    const exit = await s.stop();
    expect(exit).toBeDefined();
    expect(s.running).toBe(false);
    expect(groupMembers(pid!)).toEqual([]);
    expect(s.logs()).not.toContain('outlived the server');
    expect(existsSync(cwd)).toBe(false);
    const prefix = /shm-region-prefix-name=(\S+)/.exec(s.spec.args.join(' '))?.[1];
    if (prefix !== undefined)
      expect(readdirSync('/dev/shm').filter((name) => name.startsWith(prefix))).toEqual([]);
  });
});
