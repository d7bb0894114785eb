/**
 * The processes of the real control plane: where scripts/install-control-plane.sh put each piece (built the first
 * time a machine asks), and how one is started, waited for and stopped. Every process dies with the test process
 * (`setpriv --pdeathsig KILL`); its output is kept in `<dir>/<name>.log` and quoted when it fails to come up.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { request as plainRequest } from 'node:http';
import { join } from 'node:path';
import { waitFor } from '../../src/testing/wait';
import { repoRoot } from '../real-servers/paths';

/** Where the installer put each piece. */
export interface ControlPlaneBinaries {
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubectl: string;
  readonly kserveManager: string;
  /** KServe's config/ (CRDs, inferenceservice-config, webhooks) of the same version as the manager. */
  readonly kserveConfig: string;
}

let installed: ControlPlaneBinaries | undefined;

/**
 * The pinned control plane, built first when this machine has none (the installer's lines go to stderr; the e2e
 * globalSetup calls this once, so a test only reads the paths).
 */
export const controlPlaneBinaries = (): ControlPlaneBinaries => {
  if (installed !== undefined) return installed;
  const script = join(repoRoot, 'scripts', 'install-control-plane.sh');
  let printed: string;
  try {
    printed = execFileSync('bash', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (error) {
    throw new Error(`no control plane to test against: ${script} failed (its output is above)`, {
      cause: error,
    });
  }
  // One `<piece> <path>` line each.
  const paths = new Map(
    printed
      .trim()
      .split('\n')
      .map((line): [string, string] => [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)]),
  );
  const at = (piece: string): string => {
    const path = paths.get(piece);
    if (path === undefined || !existsSync(path)) throw new Error(`${script} printed no ${piece}: ${printed}`);
    return path;
  };
  const kserveManager = at('kserve-manager');
  return (installed = {
    etcd: at('etcd'),
    kubeApiserver: at('kube-apiserver'),
    kubectl: at('kubectl'),
    kserveManager,
    kserveConfig: join(kserveManager, '..', 'config'),
  });
};

/** One process of the control plane, its output in a log file. */
export interface Piece {
  readonly name: string;
  readonly child: ChildProcess;
  readonly log: string;
  readonly exited: Promise<void>;
}

export const startPiece = (
  dir: string,
  name: string,
  file: string,
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>> = {},
): Piece => {
  const log = join(dir, `${name}.log`);
  const out = openSync(log, 'a');
  // The kernel kills the piece when the test process ends, however it ends.
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', file, ...args], {
    stdio: ['ignore', out, out],
    env: { ...process.env, ...env },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.unref();
  return { name, child, log, exited };
};

export const stopPiece = async (
  piece: Piece | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> => {
  if (piece === undefined || piece.child.exitCode !== null || piece.child.signalCode !== null) return;
  piece.child.kill(signal);
  const killed = setTimeout(() => piece.child.kill('SIGKILL'), 10_000);
  await piece.exited;
  clearTimeout(killed);
};

/** The status of a GET, or undefined when nothing answers yet. */
const statusOf = (url: string, headers: Record<string, string>, ca?: string): Promise<number | undefined> =>
  new Promise((resolve) => {
    const options = { headers, timeout: 2000, ...(ca === undefined ? {} : { ca }) };
    const call = (url.startsWith('https:') ? request : plainRequest)(url, options, (answer) => {
      answer.resume();
      answer.once('end', () => resolve(answer.statusCode));
    });
    call.once('error', () => resolve(undefined));
    call.once('timeout', () => call.destroy());
    call.end();
  });

/** Waits until `url` answers 200, or throws quoting the end of the piece's log (or says it exited). */
export const waitReady = async (piece: Piece, url: string, headers: Record<string, string>, ca?: string) => {
  try {
    await waitFor(
      async () => {
        if (piece.child.exitCode !== null) throw new Error(`${piece.name} exited (${piece.child.exitCode})`);
        return (await statusOf(url, headers, ca)) === 200;
      },
      60_000,
      `${piece.name} ready at ${url}`,
    );
  } catch (error) {
    const tail = readFileSync(piece.log, 'utf8').split('\n').slice(-30).join('\n');
    throw new Error(`${String(error)}; the end of ${piece.log}:\n${tail}`, { cause: error });
  }
};
