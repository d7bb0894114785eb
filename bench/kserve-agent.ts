/**
 * The real KServe Go agent (`cmd/agent` of github.com/kserve/kserve v0.19.0) as a peer of the suites: built once per
 * machine by scripts/install-kserve-agent.sh, started as KServe's webhook starts it (a proxy on `--port` to the
 * model server on `--component-port`; with `--enable-puller`, the model puller on `--config-dir`/`--model-dir`).
 *
 * Its puller always loads at `http://localhost:8080`, so the suites that run it need port 8080 of their own: the
 * runner puts the whole bench in a network namespace of its own (`unshare -n`, see run.ts), where 8080 is free.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { waitFor } from '../src/testing/wait';

/** Where the Go agent's puller sends its load and unload requests: fixed in its code. */
export const kserveAgentServerPort = 8080;

let built: { readonly path?: string; readonly why?: string } | undefined;

/** The agent binary, built on first use (minutes, once per machine), or why there is none. */
export const kserveAgent = (): { readonly path?: string; readonly why?: string } => {
  if (built !== undefined) return built;
  const script = path.resolve(__dirname, '..', '..', 'scripts', 'install-kserve-agent.sh');
  try {
    const binary = execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    built = { path: binary.trim() };
  } catch (error) {
    built = { why: `scripts/install-kserve-agent.sh failed: ${(error as Error).message.split('\n')[0]}` };
  }
  return built;
};

/** Whether this process runs in the bench's own network namespace (port 8080 is ours). */
export const inOwnNetwork = (): boolean => process.env.MODELSYNC_BENCH_NETNS === '1';

/**
 * Why the Go agent cannot be a peer here, or undefined when it can: it needs its binary and the bench's own network
 * namespace (its puller loads at localhost:8080, and its abstract socket `@/kserve/agent.sock` is per namespace).
 */
export const kserveAgentMissing = (): string | undefined => {
  if (!inOwnNetwork())
    return "not in the bench's own network namespace (run as root: npm run bench does unshare -n)";
  return kserveAgent().why;
};

/** A port free on 127.0.0.1 now (the OS's pick), for a peer that cannot be told to listen on port 0. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });

/** A running Go agent. */
export interface KserveAgentProcess {
  readonly port: number;
  readonly pid: number;
  readonly stop: () => void;
  /** Resolves once it exited. */
  readonly exited: Promise<void>;
}

/**
 * Starts the Go agent with `args` (beyond `--port`), the environment its webhook injection sets (an empty
 * SERVING_READINESS_PROBE: no probe of the model server), and resolves once its port accepts connections.
 */
export const startKserveAgent = async (args: ReadonlyArray<string>): Promise<KserveAgentProcess> => {
  const binary = kserveAgent().path;
  if (binary === undefined) throw new Error(kserveAgent().why);
  const port = await freePort();
  const child = spawn(binary, ['--port', String(port), ...args], {
    env: { ...process.env, SERVING_READINESS_PROBE: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = (): void => void child.kill('SIGKILL'); // its SIGTERM drains for 30 s, by design
  const accepting = async (): Promise<boolean> =>
    new Promise((resolve) => {
      const probe = createConnection({ host: '127.0.0.1', port });
      probe.once('connect', () => (probe.destroy(), resolve(true)));
      probe.once('error', () => resolve(false));
    });
  try {
    await waitFor(async () => child.exitCode === null && (await accepting()), 60_000, 'the KServe agent');
  } catch (error) {
    stop();
    throw new Error(`${(error as Error).message}; its stderr: ${stderr}`, { cause: error });
  }
  return { port, pid: child.pid!, stop, exited };
};
