/**
 * A real Kubernetes control plane for the e2e tests: etcd and kube-apiserver, built from the Go module proxy by
 * scripts/install-control-plane.sh (the e2e globalSetup runs it: ~14 CPU-minutes the first time on a machine, a file
 * test after), started per test file on free 127.0.0.1 ports in a temp dir of its own. Nothing else runs: no
 * controller-manager, scheduler or kubelet, so namespaces never finish deleting (a test takes a new one) and no
 * ServiceAccount appears by itself (a test creates what it uses). The API server serves the fixture certificate
 * (test/fixtures/tls: SAN 127.0.0.1), signs ServiceAccount tokens with a key made here, authorizes with RBAC, and
 * knows one static token, the admin's (`system:masters`), which `kubectl` is given (the processes: ./pieces.ts).
 * What these tests cover: docs/operating.md, "Config sources".
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { killAllCli } from '../helpers/cli-process';
import { removeTempDir, tempDir } from '../helpers/temp-dir';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import type { KubeObject } from '../deploy/kustomize';
import { repoRoot } from '../real-servers/paths';
import { freePorts } from '../real-servers/servers';
import { controlPlaneBinaries, startPiece, stopPiece, waitReady, type Piece } from './pieces';

export { controlPlaneBinaries, type ControlPlaneBinaries } from './pieces';

const tlsDir = join(repoRoot, 'test', 'fixtures', 'tls');

/** A running control plane. */
export interface ControlPlane {
  /** Its temp dir: etcd's data, the certificates, every piece's `<name>.log`. */
  readonly dir: string;
  /** The API server, `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** The CA file that signed the API server's certificate. */
  readonly caFile: string;
  /** A kubeconfig of the admin (`system:masters`), for kubectl. */
  readonly adminKubeconfig: string;
  /** Runs kubectl as the admin; resolves with its stdout, rejects with its stderr. */
  kubectl(args: ReadonlyArray<string>, input?: string): Promise<string>;
  /** `kubectl apply` of `objects` (server-side, so a re-apply of an edited object replaces its fields). */
  apply(...objects: ReadonlyArray<object>): Promise<void>;
  /** A fresh namespace (none is ever deleted for good here: nothing finalizes them). */
  namespace(prefix: string): Promise<string>;
  /**
   * Compacts etcd's history up to its current revision (through etcd's JSON gateway, as `etcdctl compact` does):
   * every resourceVersion before it is gone from storage; resolves with that revision.
   */
  compactEtcd(): Promise<number>;
  /** Stops the API server (`SIGKILL`: as a crash; `SIGTERM`: as a rollout) and starts it again. */
  restartApiServer(signal: NodeJS.Signals, options?: { readonly downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

const kubeconfigFor = (
  url: string,
  caFile: string,
  user: Readonly<Record<string, unknown>>,
  namespace = 'default',
): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'real', cluster: { server: url, 'certificate-authority': caFile } }],
    users: [{ name: 'user', user }],
    contexts: [{ name: 'real', context: { cluster: 'real', user: 'user', namespace } }],
    'current-context': 'real',
  });

/** Writes a kubeconfig for `user` (e.g. `{ tokenFile }` or `{ token }`) of `plane` to `file`, `namespace` its default. */
export const writeKubeconfig = (
  file: string,
  plane: Pick<ControlPlane, 'url' | 'caFile'>,
  user: Readonly<Record<string, unknown>>,
  namespace?: string,
): string => {
  writeFileSync(file, kubeconfigFor(plane.url, plane.caFile, user, namespace));
  return file;
};

/** Starts etcd and the API server in `dir`; resolves once `/readyz` answers 200 (~5 s here). */
export const startControlPlane = async (dir: string): Promise<ControlPlane> => {
  const binaries = controlPlaneBinaries();
  mkdirSync(dir, { recursive: true });
  const [etcdClient, etcdPeer, apiPort] = (await freePorts(3)) as [number, number, number];
  const etcdUrl = `http://127.0.0.1:${etcdClient}`;
  const peerUrl = `http://127.0.0.1:${etcdPeer}`;
  const etcd = startPiece(dir, 'etcd', binaries.etcd, [
    '--name=test',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
    '--log-level=warn',
  ]);
  let apiServer: Piece | undefined;
  try {
    await waitReady(etcd, `${etcdUrl}/health`, {});
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    writeFileSync(join(dir, 'sa.pub'), publicKey);
    writeFileSync(join(dir, 'sa.key'), privateKey);
    const adminToken = randomBytes(16).toString('hex');
    writeFileSync(join(dir, 'tokens.csv'), `${adminToken},admin,admin-uid,"system:masters"\n`);
    const caFile = join(tlsDir, 'ca.pem');
    const url = `https://127.0.0.1:${apiPort}`;
    const apiArgs = [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      // Its `kubernetes` Service's endpoint would be 127.0.0.1, which validation refuses.
      '--endpoint-reconciler-type=none',
      `--tls-cert-file=${join(tlsDir, 'server.pem')}`,
      `--tls-private-key-file=${join(tlsDir, 'server-key.pem')}`,
      `--client-ca-file=${caFile}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--authorization-mode=RBAC',
      `--cert-dir=${join(dir, 'certs')}`,
    ];
    const admin = { Authorization: `Bearer ${adminToken}` };
    const ca = readFileSync(caFile, 'utf8');
    const startApiServer = async (): Promise<void> => {
      apiServer = startPiece(dir, 'kube-apiserver', binaries.kubeApiserver, apiArgs);
      await waitReady(apiServer, `${url}/readyz`, admin, ca);
    };
    await startApiServer();
    const adminKubeconfig = join(dir, 'admin.kubeconfig');
    writeKubeconfig(adminKubeconfig, { url, caFile }, { token: adminToken });
    const run = promisify(execFile);
    const kubectl = async (args: ReadonlyArray<string>, input?: string): Promise<string> => {
      const running = run(binaries.kubectl, ['--kubeconfig', adminKubeconfig, ...args], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      });
      if (input !== undefined) running.child.stdin!.end(input);
      try {
        return (await running).stdout;
      } catch (error) {
        const stderr = (error as { stderr?: string }).stderr ?? '';
        throw new Error(`kubectl ${args.join(' ')}: ${stderr.trim() || String(error)}`, { cause: error });
      }
    };
    let namespaces = 0;
    return {
      dir,
      url,
      caFile,
      adminKubeconfig,
      kubectl,
      apply: async (...objects) => {
        const list = { apiVersion: 'v1', kind: 'List', items: objects };
        await kubectl(
          ['apply', '--server-side', '--force-conflicts', '--field-manager=test', '-f', '-'],
          JSON.stringify(list),
        );
      },
      namespace: async (prefix) => {
        const name = `${prefix}-${++namespaces}`;
        await kubectl(['create', 'namespace', name]);
        return name;
      },
      compactEtcd: async () => {
        const call = async (path: string, body: object): Promise<Record<string, unknown>> => {
          const answer = await fetch(`${etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) });
          if (!answer.ok) throw new Error(`etcd ${path}: HTTP ${answer.status}: ${await answer.text()}`);
          return (await answer.json()) as Record<string, unknown>;
        };
        const range = await call('/v3/kv/range', {
          key: Buffer.from('/registry').toString('base64'),
          limit: 1,
        });
        const revision = Number((range['header'] as { revision?: string } | undefined)?.revision);
        if (!Number.isInteger(revision)) throw new Error(`etcd gave no revision: ${JSON.stringify(range)}`);
        await call('/v3/kv/compaction', { revision: String(revision), physical: true });
        return revision;
      },
      restartApiServer: async (signal, options = {}) => {
        await stopPiece(apiServer, signal);
        if (options.downMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.downMs));
        await startApiServer();
      },
      stop: async () => {
        await stopPiece(apiServer);
        await stopPiece(etcd);
      },
    };
  } catch (error) {
    await stopPiece(apiServer, 'SIGKILL');
    await stopPiece(etcd, 'SIGKILL');
    throw error;
  }
};

/** A control plane for the test file: started before its first test, stopped (its dir removed) after its last. */
export const useControlPlane = (): { readonly plane: ControlPlane } => {
  const held = {} as { plane: ControlPlane };
  let dir: string | undefined;
  beforeAll(async () => {
    dir = await tempDir('control-plane');
    held.plane = await startControlPlane(dir);
  });
  afterAll(async () => {
    await held.plane?.stop();
    if (dir !== undefined) await removeTempDir(dir);
  });
  return held;
};

/** A V2 stand-in per test (`start`, then `server`), closed after each test with every CLI it started (`stopAll`). */
export const useV2StandIn = (): {
  start(modelDir: string): Promise<V2ModelServerStandIn>;
  stopAll(): Promise<void>;
  readonly server: V2ModelServerStandIn | undefined;
} => {
  let server: V2ModelServerStandIn | undefined;
  const stopAll = async (): Promise<void> => {
    await killAllCli();
    await server?.close();
    server = undefined;
  };
  afterEach(stopAll);
  return {
    start: async (modelDir) => (server = await startV2ModelServer({ modelDir })),
    stopAll,
    get server() {
      return server;
    },
  };
};

/** `object` moved to `namespace` (a test's own), a RoleBinding's ServiceAccount subjects with it. */
export const inNamespace = (object: KubeObject, namespace: string): KubeObject => {
  const moved = { ...object, metadata: { ...object.metadata, namespace } } as KubeObject & {
    subjects?: Array<Record<string, string>>;
  };
  if (moved.subjects !== undefined)
    moved.subjects = moved.subjects.map((subject) =>
      subject['kind'] === 'ServiceAccount' ? { ...subject, namespace } : subject,
    );
  return moved;
};
