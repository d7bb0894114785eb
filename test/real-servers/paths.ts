/** Where the real model servers of the e2e tests live: the repo's scripts, and the cache global setup fills. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The real model servers the tests run. */
export type RealServerKind = 'triton' | 'mlserver' | 'kserve';

/** Every real server kind, in the order global setup installs them. */
export const realServerKinds: ReadonlyArray<RealServerKind> = ['triton', 'mlserver', 'kserve'];

/** The repository's root: the first dir up from here with a package.json (this file also runs compiled, from
 * `.demo-build/test/real-servers/`). */
const findRepoRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return join(__dirname, '..', '..');
  }
};
export const repoRoot = findRepoRoot(__dirname);

/** scripts/model-servers/: the installer, the requirements, make-models.py, kserve-server.py. */
export const scriptsDir = join(repoRoot, 'scripts', 'model-servers');

/**
 * The KServe launcher, always this checkout's: the install cache is shared by every clone on the machine, so it
 * records nothing of the clone that filled it.
 */
export const kserveLauncher = join(scriptsDir, 'kserve-server.py');

/**
 * `<repo>/.model-servers/` (git-ignored): one venv per server, the fixture models, the run records; or
 * `$MODEL_SERVERS_CACHE`, an absolute path (a CI job that runs in a fresh clone keeps its installs there).
 */
export const cacheDir = resolve(process.env['MODEL_SERVERS_CACHE'] || join(repoRoot, '.model-servers'));

/** `.model-servers/models/<kind>/<variant>/`: the fixture models (make-models.py). */
export const modelsDir = join(cacheDir, 'models');

/** `.model-servers/run/`: one record per server a test process started, swept when its owner is gone. */
export const runDir = join(cacheDir, 'run');

/** What install.sh writes to `.model-servers/<kind>/paths.json`. */
export interface InstalledServer {
  readonly venv: string;
  readonly python: string;
  /** The server binary: tritonserver, mlserver, or (KServe) the venv's python that runs `kserveLauncher`. */
  readonly bin: string;
  /** Put first on PATH (the venv's bin: Triton's python stub imports numpy from it). */
  readonly path: ReadonlyArray<string>;
  /** LD_LIBRARY_PATH entries (Triton's copied python stub has lost its RPATH). */
  readonly ldLibraryPath: ReadonlyArray<string>;
  readonly version: string;
  /** Triton: the backends dir, with this python's stub in backends/python. */
  readonly backendDirectory?: string;
}

/** The install of `kind`; throws, saying how to install it, when global setup has not run. */
export const installedServer = (kind: RealServerKind): InstalledServer => {
  const file = join(cacheDir, kind, 'paths.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as InstalledServer;
  } catch (error) {
    throw new Error(
      `${kind} is not installed (${file}: ${(error as Error).message}): the e2e project's globalSetup ` +
        `(test/e2e-setup.ts) installs it, or run scripts/model-servers/install.sh ${cacheDir} ${kind}`,
      { cause: error },
    );
  }
};
