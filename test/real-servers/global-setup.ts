/**
 * Part of the e2e project's globalSetup (../e2e-setup.ts): installs the real model servers into
 * `<repo>/.model-servers/` (one venv each, exact pins: scripts/model-servers/install.sh; about 2 minutes the first
 * time, a no-op after) and makes the fixture models into `.model-servers/models/` (make-models.py, again only when a
 * server's key changed). The installer's output goes straight to the run's stdout/stderr, so a CI log shows the
 * progress and, on a failure, why; the run then fails naming the server. When everything is in place it takes well
 * under a second.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  cacheDir,
  installedServer,
  modelsDir,
  realServerKinds,
  scriptsDir,
  type RealServerKind,
} from './paths';
import { sweepStaleServers } from './servers';

const run = (what: string, file: string, args: ReadonlyArray<string>): void => {
  const result = spawnSync(file, args, { stdio: 'inherit' });
  if (result.error !== undefined || result.status !== 0)
    throw new Error(
      `real model servers: ${what} failed (${file} ${args.join(' ')}: ` +
        `${result.error?.message ?? (result.signal !== null ? `killed by ${result.signal}` : `exit ${result.status}`)}); ` +
        'its output is above',
    );
};

const readOr = (file: string, otherwise: string): string => {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return otherwise;
  }
};

/** One step of making a real server ready. */
export interface SetupStep {
  readonly kind: RealServerKind;
  readonly step: 'install' | 'fixtures';
  /** What it does and about how long it takes, for a person. */
  readonly title: string;
  /** The command, read when the step runs: it runs, or reads, what an earlier step installed. */
  readonly command: () => { readonly file: string; readonly args: ReadonlyArray<string> };
}

const makeModels = join(scriptsDir, 'make-models.py');

/**
 * What `kind`'s fixture models are made from: make-models.py, and for MLServer the install whose scikit-learn
 * pickles them (a new install makes them again).
 */
const fixturesKey = (kind: RealServerKind): string =>
  createHash('sha256')
    .update(readFileSync(makeModels))
    .update(kind === 'mlserver' ? readOr(join(cacheDir, 'mlserver', 'stamp'), '') : '')
    .digest('hex');

/**
 * The steps that make `kinds` ready, and only those: each server installed (install.sh: a no-op when it is), then
 * its fixture models made with its own python (make-models.py: a no-op while their key is unchanged).
 */
export const realServerSetup = (kinds: ReadonlyArray<RealServerKind>): SetupStep[] => [
  ...kinds.map((kind): SetupStep => ({
    kind,
    step: 'install',
    title:
      `installing ${kind} into ${join(cacheDir, kind)}: the first time a few minutes and a few hundred MB ` +
      "(pip's lines follow), under a second once installed",
    command: () => ({ file: 'bash', args: [join(scriptsDir, 'install.sh'), cacheDir, kind] }),
  })),
  ...kinds.map((kind): SetupStep => ({
    kind,
    step: 'fixtures',
    title: `making the ${kind} fixture models into ${join(modelsDir, kind)} (a few seconds)`,
    command: () => ({
      file: installedServer(kind).python,
      args: [makeModels, kind, modelsDir, '--key', fixturesKey(kind)],
    }),
  })),
];

/**
 * Installs what is missing of `kinds` (every real server by default) and makes their fixtures (a no-op of well
 * under a second when all is in place), telling `announce` before each step. The e2e project's globalSetup; a
 * real-server test may call it too (in a `beforeAll` with a long timeout), so it also runs where the globalSetup
 * is not wired; the demo calls it for the one server it runs. Concurrent calls are safe (flock).
 */
export const ensureRealServers = (
  kinds: ReadonlyArray<RealServerKind> = realServerKinds,
  announce: (title: string) => void = () => undefined,
): void => {
  // Servers left by test processes that were killed before they could stop them.
  sweepStaleServers();
  for (const step of realServerSetup(kinds)) {
    announce(step.title);
    const { file, args } = step.command();
    run(
      `${step.step === 'install' ? 'installing' : 'making the fixture models of'} ${step.kind}`,
      file,
      args,
    );
  }
};
