/**
 * Real Triton, MLServer and KServe model servers for the e2e tests, started as the project's deploy overlays
 * run them: the `model-server` container of `deploy/overlays/<kind>` gives the command, args, env and the
 * readiness path, and only what differs on this machine is changed (see `launchSpec`). Each server gets free
 * 127.0.0.1 ports, its own temp dir (its cwd) and, for Triton, its own python-backend shm prefix, so two jest
 * workers can run them at once. `stop()` is SIGTERM, then SIGKILL of its process group after a deadline, then
 * the shm files and the temp dir are removed. Whatever a test leaves running dies with the test process: the
 * kernel kills it (`setpriv --pdeathsig KILL`) and a process-exit hook kills it and cleans up where 'exit' is
 * heard (outside jest's sandbox); global setup and teardown sweep what the servers of dead test processes left
 * (their shm files, temp dirs and any stub or worker that outlived them: `sweepStaleServers`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderKustomization, type KubeObject } from '../deploy/kustomize';
import { httpCall } from './http';
import {
  installedServer,
  kserveLauncher,
  repoRoot,
  runDir,
  type InstalledServer,
  type RealServerKind,
} from './paths';

export { realServerKinds, type RealServerKind } from './paths';

// ---------------------------------------------------------------------------------------------- the overlays

/** The `model-server` container of `deploy/overlays/<kind>`, as the kubelet would run it. */
export interface OverlayServer {
  readonly kind: RealServerKind;
  readonly image: string;
  /** The container's command; undefined: the image's entrypoint. */
  readonly command: ReadonlyArray<string> | undefined;
  readonly args: ReadonlyArray<string>;
  /** The env, in order (only `value` entries: a `valueFrom` cannot be reproduced here and throws). */
  readonly env: ReadonlyArray<readonly [string, string]>;
  /** Where the model dir shared with modelsync is mounted (`/mnt/models`). */
  readonly modelMount: string;
  readonly readinessPath: string;
  readonly livenessPath: string;
}

interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: unknown }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  readinessProbe?: { httpGet?: { path?: string } };
  livenessProbe?: { httpGet?: { path?: string } };
}

const overlayDir = (kind: RealServerKind): string => join(repoRoot, 'deploy', 'overlays', kind);

/** Renders the overlay of `kind` (real kustomize: test/deploy/kustomize.ts) and takes its `model-server` container. */
export const overlayServer = (kind: RealServerKind): OverlayServer => {
  const where = `deploy/overlays/${kind}`;
  const objects: KubeObject[] = renderKustomization(overlayDir(kind));
  const deployments = objects.filter((object) => object.kind === 'Deployment');
  if (deployments.length !== 1)
    throw new Error(`${where}: expected one Deployment, found ${deployments.length}`);
  const pod = (deployments[0] as unknown as { spec: { template: { spec: { containers: Container[] } } } })
    .spec.template.spec;
  const named = (name: string): Container => {
    const found = pod.containers.find((container) => container.name === name);
    if (found === undefined) throw new Error(`${where}: no container ${name}`);
    return found;
  };
  const server = named('model-server');
  const modelsync = named('modelsync');
  // The model dir is the volume both containers mount.
  const shared = (server.volumeMounts ?? []).find((mount) =>
    (modelsync.volumeMounts ?? []).some((theirs) => theirs.name === mount.name),
  );
  if (shared === undefined) throw new Error(`${where}: the model server mounts no volume modelsync mounts`);
  const env = (server.env ?? []).map((entry): readonly [string, string] => {
    if (entry.value === undefined) throw new Error(`${where}: env ${entry.name} has no plain value`);
    return [entry.name, entry.value];
  });
  const probePath = (probe: Container['readinessProbe'], what: string): string => {
    const path = probe?.httpGet?.path;
    if (path === undefined) throw new Error(`${where}: the model server's ${what} probe is not an httpGet`);
    return path;
  };
  return {
    kind,
    image: server.image ?? '',
    command: server.command,
    args: server.args ?? [],
    env,
    modelMount: shared.mountPath,
    readinessPath: probePath(server.readinessProbe, 'readiness'),
    livenessPath: probePath(server.livenessProbe, 'liveness'),
  };
};

// --------------------------------------------------------------------------------- what runs on this machine

/** The ports a server listens on here (all on 127.0.0.1). */
export interface ServerPorts {
  readonly http: number;
  /** MLServer only: gRPC and metrics cannot be switched off. */
  readonly grpc: number;
  readonly metrics: number;
}

/** How one start runs: what `spawn` gets. */
export interface LaunchSpec {
  readonly file: string;
  readonly args: ReadonlyArray<string>;
  /** Only what the overlay and this harness set; the process also inherits the test's environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

/** What `launchSpec` needs beyond the overlay. */
export interface LaunchContext {
  readonly installed: InstalledServer;
  readonly modelDir: string;
  readonly ports: ServerPorts;
  /** Triton's python backend shared memory: `/dev/shm/<shmPrefix>*`. */
  readonly shmPrefix: string;
  /** The server's cwd (MLServer reads ./.env and ./settings.json there and writes ./.envs, ./.metrics). */
  readonly workDir: string;
  /** Triton's --exit-timeout-secs here (default 5: a failed reload makes every SIGTERM wait that long). */
  readonly exitTimeoutSecs?: number;
}

const driftError = (kind: RealServerKind, what: string): Error =>
  new Error(
    `deploy/overlays/${kind}/model-server.yaml: ${what}; test/real-servers/servers.ts (launchSpec) substitutes ` +
      'it for this machine: change both together',
  );

/** The index of `flag` in `args` as `flag=value` or `flag value`, and its form. */
const findFlag = (
  args: ReadonlyArray<string>,
  flag: string,
): { index: number; joined: boolean } | undefined => {
  const index = args.findIndex((arg) => arg === flag || arg.startsWith(`${flag}=`));
  return index < 0 ? undefined : { index, joined: args[index] !== flag };
};

/** `args` with the value of `flag` set to `value`, in the form the overlay wrote it; throws when it is absent. */
const setFlag = (kind: RealServerKind, args: string[], flag: string, value: string): string[] => {
  const found = findFlag(args, flag);
  if (found === undefined) throw driftError(kind, `the model server's args have no ${flag}`);
  const next = [...args];
  if (found.joined) next[found.index] = `${flag}=${value}`;
  else next[found.index + 1] = value;
  return next;
};

/** `args` without `flag` (and its value), wherever it is. */
const dropFlag = (args: string[], flag: string): string[] => {
  const found = findFlag(args, flag);
  if (found === undefined) return args;
  return args.filter((_, i) => i !== found.index && (found.joined || i !== found.index + 1));
};

/** `value` with the overlay's model mount (as a whole path, alone or after `=`) replaced by `modelDir`. */
const withModelDir = (value: string, mount: string, modelDir: string): string =>
  value.replace(
    new RegExp(`(^|=)${mount.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=/|$)`, 'g'),
    `$1${modelDir}`,
  );

/**
 * The command, args, env and cwd that run the overlay's model server on this machine. What differs from the pod,
 * and only that:
 *
 * - everywhere: the image's command → the installed binary (`.model-servers/<kind>/paths.json`); the model mount
 *   (`/mnt/models`) → `modelDir`; the HTTP port → a free one, on 127.0.0.1 (a pod listens on every address so
 *   the kubelet can probe it; a test listens on loopback only); PATH and LD_LIBRARY_PATH for the venv;
 * - Triton: `--backend-directory` (the image has `/opt/tritonserver/backends`; here, the copy with this
 *   python's stub); a unique `--backend-config=python,shm-region-prefix-name=` (the pod has /dev/shm to itself;
 *   tests share one); gRPC and metrics off (their ports would be two more to find, and no test uses them);
 *   `--exit-timeout-secs` 5 (see `LaunchContext`); `--disable-auto-complete-config` (the fixtures carry complete
 *   configs, and the protocol in the lab's FINDINGS.md was recorded with it; users' ONNX or TensorRT models
 *   without a config.pbtxt need auto-complete, which the overlay keeps);
 * - MLServer: the gRPC and metrics ports (it cannot switch them off) → free ones; `MLSERVER_HOST`; its
 *   environments and metrics dirs in the temp cwd;
 * - KServe: the image's entrypoint → `kserve-server.py` in the venv's python; `--http_host 127.0.0.1` (a flag of
 *   that launcher: KServe itself always binds 0.0.0.0).
 */
export const launchSpec = (overlay: OverlayServer, context: LaunchContext): LaunchSpec => {
  const { kind } = overlay;
  const { installed, modelDir, ports, workDir } = context;
  let args = overlay.args.map((arg) => withModelDir(arg, overlay.modelMount, modelDir));
  const env: Record<string, string> = Object.fromEntries(
    overlay.env.map(([name, value]) => [name, withModelDir(value, overlay.modelMount, modelDir)]),
  );
  env['PATH'] = [...installed.path, process.env['PATH'] ?? '/usr/bin:/bin'].join(':');
  if (installed.ldLibraryPath.length > 0)
    env['LD_LIBRARY_PATH'] = [
      ...installed.ldLibraryPath,
      ...(process.env['LD_LIBRARY_PATH'] ?? '').split(':'),
    ]
      .filter((entry) => entry !== '')
      .join(':');
  env['PYTHONUNBUFFERED'] = '1';
  const expectCommand = (expected: string | undefined): void => {
    const command = overlay.command?.join(' ');
    if (command !== expected)
      throw driftError(
        kind,
        `the command is ${command ?? "the image's entrypoint"}, not ${expected ?? "the image's"}`,
      );
  };
  switch (kind) {
    case 'triton': {
      expectCommand('tritonserver');
      args = setFlag(kind, args, '--http-port', String(ports.http));
      args = setFlag(kind, args, '--exit-timeout-secs', String(context.exitTimeoutSecs ?? 5));
      for (const flag of ['--grpc-port', '--metrics-port', '--http-address', '--backend-directory'])
        args = dropFlag(args, flag);
      args.push(
        '--http-address=127.0.0.1',
        '--allow-grpc=false',
        '--allow-metrics=false',
        '--allow-gpu-metrics=false',
        `--backend-directory=${installed.backendDirectory ?? ''}`,
        `--backend-config=python,shm-region-prefix-name=${context.shmPrefix}`,
        '--disable-auto-complete-config',
      );
      return { file: installed.bin, args, env, cwd: workDir };
    }
    case 'mlserver': {
      expectCommand('mlserver');
      for (const [name, port] of [
        ['MLSERVER_HTTP_PORT', ports.http],
        ['MLSERVER_GRPC_PORT', ports.grpc],
        ['MLSERVER_METRICS_PORT', ports.metrics],
      ] as const) {
        if (env[name] === undefined) throw driftError(kind, `the model server's env has no ${name}`);
        env[name] = String(port);
      }
      if (env['MLSERVER_MODEL_REPOSITORY_ROOT'] !== modelDir)
        throw driftError(kind, `MLSERVER_MODEL_REPOSITORY_ROOT is not the model mount ${overlay.modelMount}`);
      Object.assign(env, {
        MLSERVER_HOST: '127.0.0.1',
        MLSERVER_ENVIRONMENTS_DIR: join(workDir, '.envs'),
        MLSERVER_METRICS_DIR: join(workDir, '.metrics'),
      });
      return { file: installed.bin, args, env, cwd: workDir };
    }
    case 'kserve': {
      expectCommand(undefined);
      args = setFlag(kind, args, '--http_port', String(ports.http));
      args.push('--http_host', '127.0.0.1');
      return { file: installed.bin, args: [kserveLauncher, ...args], env, cwd: workDir };
    }
  }
};

// ------------------------------------------------------------------------------------------- the processes

/** How to start a real server. */
export interface RealServerOptions {
  /** The model repository (it must exist): what the pod mounts at /mnt/models. */
  readonly modelDir: string;
  /** Env set after the overlay's (e.g. `{ MLSERVER_PARALLEL_WORKERS: '0' }`). */
  readonly env?: Readonly<Record<string, string>>;
  /** Args put after the harness's (Triton and KServe take the last of a repeated flag). */
  readonly extraArgs?: ReadonlyArray<string>;
  /** Triton's --exit-timeout-secs (default 5). */
  readonly exitTimeoutSecs?: number;
  /** How long a start may take to answer the overlay's readiness path (default 60 s). */
  readonly readyTimeoutMs?: number;
  /** How long `stop()` waits after SIGTERM before it kills the process group (default 15 s). */
  readonly stopTimeoutMs?: number;
}

/** How a server process ended. */
export interface ServerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A running (or stopped) real model server. */
export interface RealServer {
  readonly kind: RealServerKind;
  /** `http://127.0.0.1:<port>`; the port stays the same across `restart()` unless it was taken meanwhile. */
  readonly url: string;
  readonly modelDir: string;
  /** The server's main process (its process group has the same id), while it runs. */
  readonly pid: number | undefined;
  readonly ports: ServerPorts;
  /** What the last start ran. */
  readonly spec: LaunchSpec;
  /** The `model-server` container of the overlay this server runs. */
  readonly overlay: OverlayServer;
  /** Milliseconds from spawn to the first 200 of the readiness path, for the last start. */
  readonly startToReadyMs: number;
  readonly running: boolean;
  /** SIGTERM, then SIGKILL of the process group after `stopTimeoutMs`; then removes its shm files and temp dir. */
  stop(): Promise<ServerExit | undefined>;
  /** SIGKILL of the process group at once, then the same clean-up. */
  kill(): Promise<ServerExit | undefined>;
  /** `stop()`, then a new start on the same ports and model dir (nothing loaded: explicit mode). */
  restart(): Promise<void>;
  /** Everything the server wrote to stdout and stderr, in arrival order, across restarts (the last 4 MiB). */
  logs(): string;
  /** Resolves when the output since the last start matches `pattern`; rejects on timeout or exit. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

interface RunRecord {
  readonly owner: number;
  readonly pid: number;
  readonly kind: RealServerKind;
  readonly bin: string;
  readonly shmPrefix: string;
  readonly workDir: string;
}

const maxLogChars = 4 * 1024 * 1024;
const setpriv = '/usr/bin/setpriv';
const live = new Set<{ killNow(): void }>();
let startCounter = 0;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The first port the kernel hands out for bind(0) and outgoing connections (Linux's default when unreadable). */
const ephemeralLow = (): number => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
};

const holdPort = (port: number): Promise<ReturnType<typeof createServer> | undefined> =>
  new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });

/**
 * `count` distinct free ports on 127.0.0.1 (held open together while they are picked), from below the kernel's
 * ephemeral range: no bind(0) of another test and no outgoing connection's source port can take one while its
 * server is down for a restart, which must come back at the same URL.
 */
export const freePorts = async (count: number): Promise<number[]> => {
  const low = 10_000;
  const high = ephemeralLow() - 1;
  const held: Array<ReturnType<typeof createServer>> = [];
  try {
    for (let tries = 0; held.length < count; tries++) {
      if (tries > 1_000) throw new Error(`no ${count} free ports in ${low}–${high} on 127.0.0.1`);
      const port = low + Math.floor(Math.random() * (high - low + 1));
      if (held.some((server) => (server.address() as AddressInfo).port === port)) continue;
      const server = await holdPort(port);
      if (server !== undefined) held.push(server);
    }
    return held.map((server) => (server.address() as AddressInfo).port);
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
};

/** Removes `/dev/shm/<prefix>*`. */
const removeShm = (prefix: string): void => {
  if (prefix === '') return;
  let names: string[];
  try {
    names = readdirSync('/dev/shm');
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(prefix)) rmSync(join('/dev/shm', name), { force: true });
};

const killGroup = (pid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
};

/** The live processes of process group `pgid` (not zombies: an orphan is reaped by init when it gets to it). */
export const groupMembers = (pgid: number): Array<{ pid: number; comm: string }> => {
  const members: Array<{ pid: number; comm: string }> = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return members;
  }
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const [state, , pgrp] = stat.slice(close + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z')
        members.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, close) });
    } catch {
      // gone meanwhile
    }
  }
  return members;
};

const commandLine = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 300);
  } catch {
    return undefined;
  }
};

const exitHook = (): void => {
  for (const server of [...live]) server.killNow();
};
let hooked = false;

const addressInUse = /address already in use|errno 98|EADDRINUSE|Address in use|bind.*failed|could not bind/i;

/**
 * Starts the real `kind` server of `deploy/overlays/<kind>` on free 127.0.0.1 ports over `options.modelDir` and
 * resolves once its readiness path answers 200 (explicit model control: nothing is loaded). Rejects, with the
 * server's output, when it exits first or is not ready within `readyTimeoutMs`. A start whose port was taken
 * between picking and binding is tried again on new ports (up to 3 times); a restart, on its own ports.
 */
export const startRealServer = async (
  kind: RealServerKind,
  options: RealServerOptions,
): Promise<RealServer> => {
  if (!hooked) {
    process.once('exit', exitHook);
    hooked = true;
  }
  const overlay = overlayServer(kind);
  const installed = installedServer(kind);
  const stopTimeoutMs = options.stopTimeoutMs ?? 15_000;
  let log = '';
  let sinceStart = 0;
  const append = (text: string): void => {
    log += text;
    if (log.length > maxLogChars) {
      const cut = log.length - maxLogChars;
      log = log.slice(cut);
      sinceStart = Math.max(0, sinceStart - cut);
    }
  };

  let [http, grpc, metrics] = (await freePorts(3)) as [number, number, number];
  let child: ChildProcess | undefined;
  let exited: Promise<ServerExit> | undefined;
  let exit: ServerExit | undefined;
  let workDir = '';
  let shmPrefix = '';
  let recordFile = '';
  let spec: LaunchSpec | undefined;
  let startToReadyMs = 0;

  const cleanUp = (): void => {
    removeShm(shmPrefix);
    if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
    if (recordFile !== '') rmSync(recordFile, { force: true });
    workDir = '';
    recordFile = '';
  };
  const handle = {
    killNow: (): void => {
      if (child?.pid !== undefined && exit === undefined) killGroup(child.pid, 'SIGKILL');
      cleanUp();
      live.delete(handle);
    },
  };

  const spawnOnce = (): void => {
    const id = `${process.pid}-${++startCounter}`;
    workDir = mkdtempSync(join(tmpdir(), `modelsync-${kind}-`));
    shmPrefix = kind === 'triton' ? `modelsync_test_${id.replace('-', '_')}_` : '';
    spec = launchSpec(overlay, {
      installed,
      modelDir: options.modelDir,
      ports: { http, grpc, metrics },
      shmPrefix,
      workDir,
      ...(options.exitTimeoutSecs === undefined ? {} : { exitTimeoutSecs: options.exitTimeoutSecs }),
    });
    const inherited = Object.entries(process.env).filter(
      ([key]) =>
        !/^(MODELSYNC_|MLSERVER_|KSERVE_|TRITON)/.test(key) &&
        !/^(https?|no|all)_proxy$/i.test(key) &&
        !['PYTHONPATH', 'PYTHONHOME', 'VIRTUAL_ENV'].includes(key),
    );
    exit = undefined;
    sinceStart = log.length;
    const command = [spec.file, ...spec.args, ...(options.extraArgs ?? [])];
    // setpriv --pdeathsig: the kernel kills the server when the thread that started it ends, however the test
    // process ends (a jest worker's exit, a crash, SIGKILL); jest's sandboxed `process` never sees 'exit'.
    const [file, ...args] = existsSync(setpriv)
      ? [setpriv, '--pdeathsig', 'KILL', '--', ...command]
      : command;
    child = spawn(file!, args, {
      cwd: spec.cwd,
      env: { ...Object.fromEntries(inherited), ...spec.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: Triton's python stubs and MLServer's workers go with it
    });
    const current = child;
    current.stdout!.setEncoding('utf8').on('data', append);
    current.stderr!.setEncoding('utf8').on('data', append);
    // A server a test forgot to stop does not keep the test process alive; it dies with it (pdeathsig above).
    current.unref();
    (current.stdout as Socket).unref();
    (current.stderr as Socket).unref();
    exited = new Promise<ServerExit>((resolve) => {
      current.on('error', (error) => {
        append(`\n[harness] spawn ${spec?.file}: ${error.message}\n`);
        resolve((exit = { code: null, signal: null }));
      });
      current.on('close', (code, signal) => resolve((exit = { code, signal })));
    });
    live.add(handle);
    if (current.pid !== undefined) {
      mkdirSync(runDir, { recursive: true });
      recordFile = join(runDir, `${id}.json`);
      const record: RunRecord = {
        owner: process.pid,
        pid: current.pid,
        kind,
        bin: spec.file,
        shmPrefix,
        workDir,
      };
      writeFileSync(recordFile, JSON.stringify(record));
    }
  };

  const waitReady = async (): Promise<void> => {
    const started = Date.now();
    const deadline = started + (options.readyTimeoutMs ?? 60_000);
    for (;;) {
      if (exit !== undefined) throw new Error(`exited (${JSON.stringify(exit)}) before it was ready`);
      try {
        const answer = await httpCall(
          'GET',
          `http://127.0.0.1:${http}${overlay.readinessPath}`,
          undefined,
          2_000,
        );
        if (answer.status === 200) {
          startToReadyMs = Date.now() - started;
          return;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline)
        throw new Error(
          `not ready (GET ${overlay.readinessPath} → 200) within ${options.readyTimeoutMs ?? 60_000} ms`,
        );
      await sleep(50);
    }
  };

  const terminate = async (signal: 'SIGTERM' | 'SIGKILL'): Promise<ServerExit | undefined> => {
    const current = child;
    if (current?.pid === undefined || exited === undefined) {
      cleanUp();
      live.delete(handle);
      return exit;
    }
    if (exit === undefined) {
      if (signal === 'SIGKILL') killGroup(current.pid, 'SIGKILL');
      else current.kill('SIGTERM'); // the kubelet signals the container's main process only
      const timer = setTimeout(() => {
        append(`\n[harness] still running ${stopTimeoutMs} ms after SIGTERM: SIGKILL to its process group\n`);
        killGroup(current.pid!, 'SIGKILL');
      }, stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    }
    // What the server started may end just after it (MLServer's multiprocessing resource tracker unlinks the
    // semaphores left in /dev/shm when its last user is gone): a moment for that, then whatever still runs is
    // killed (the kubelet would kill it with the container) and waited for, so a stopped server leaves nothing.
    const graceEnd = Date.now() + (signal === 'SIGTERM' ? 3_000 : 0);
    while (groupMembers(current.pid).length > 0 && Date.now() < graceEnd) await sleep(20);
    const outlived = groupMembers(current.pid);
    if (outlived.length > 0) {
      const described = outlived.map(({ pid, comm }) => `${pid} ${commandLine(pid) ?? comm}`).join('; ');
      append(`\n[harness] outlived the server, killed: ${described}\n`);
      killGroup(current.pid, 'SIGKILL');
      const deadline = Date.now() + 5_000;
      while (groupMembers(current.pid).length > 0 && Date.now() < deadline) await sleep(20);
    }
    cleanUp();
    live.delete(handle);
    return exit;
  };

  /** A first start takes new ports when one was taken meanwhile; a restart waits for its own (same URL). */
  const start = async (samePorts: boolean): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      spawnOnce();
      try {
        await waitReady();
        return;
      } catch (error) {
        await terminate('SIGKILL');
        const output = log.slice(sinceStart);
        if (attempt < 3 && addressInUse.test(output)) {
          if (samePorts) await sleep(2_000);
          else [http, grpc, metrics] = (await freePorts(3)) as [number, number, number];
          continue;
        }
        throw new Error(
          `${kind} (${spec?.file} ${spec?.args.join(' ')}): ${(error as Error).message}\n--- its output ---\n${output.slice(-8000)}`,
          { cause: error },
        );
      }
    }
  };

  await start(false);
  const server: RealServer = {
    kind,
    get url() {
      return `http://127.0.0.1:${http}`;
    },
    modelDir: options.modelDir,
    get pid() {
      return exit === undefined ? child?.pid : undefined;
    },
    get ports() {
      return { http, grpc, metrics };
    },
    get spec() {
      return spec!;
    },
    overlay,
    get startToReadyMs() {
      return startToReadyMs;
    },
    get running() {
      return child !== undefined && exit === undefined;
    },
    stop: () => terminate('SIGTERM'),
    kill: () => terminate('SIGKILL'),
    restart: async () => {
      await terminate('SIGTERM');
      append(`\n[harness] --- restart ---\n`);
      await start(true);
    },
    logs: () => log,
    waitForLog: async (pattern, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(log.slice(sinceStart))) {
        if (exit !== undefined)
          throw new Error(`${kind} exited (${JSON.stringify(exit)}) before logging ${pattern}`);
        if (Date.now() > deadline) throw new Error(`${kind} did not log ${pattern} within ${timeoutMs} ms`);
        await sleep(20);
      }
    },
  };
  return server;
};

/** True when process `pid` exists. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Cleans up after test processes that died without stopping their servers (a killed jest worker): for each run
 * record whose owner is gone, kills the server's process group if that pid still runs the recorded binary, and
 * removes its shm files and temp dir. Returns how many records it swept.
 */
export const sweepStaleServers = (): number => {
  let names: string[];
  try {
    names = readdirSync(runDir).filter((name) => name.endsWith('.json'));
  } catch {
    return 0;
  }
  let swept = 0;
  for (const name of names) {
    const file = join(runDir, name);
    let record: RunRecord;
    try {
      record = JSON.parse(readFileSync(file, 'utf8')) as RunRecord;
    } catch {
      rmSync(file, { force: true });
      continue;
    }
    if (alive(record.owner)) continue;
    // The group is the server's while its leader runs the recorded binary, or (leader gone) while it has
    // members at all: a pid is not reused while a process group of that id exists.
    let leader: string | undefined;
    try {
      leader = readFileSync(`/proc/${record.pid}/cmdline`, 'utf8');
    } catch {
      leader = undefined;
    }
    const ours =
      leader === undefined ? groupMembers(record.pid).length > 0 : leader.split('\0').includes(record.bin);
    if (ours) killGroup(record.pid, 'SIGKILL');
    removeShm(record.shmPrefix);
    rmSync(record.workDir, { recursive: true, force: true });
    try {
      unlinkSync(file);
    } catch {
      // swept by another process at the same time
    }
    swept++;
  }
  return swept;
};
