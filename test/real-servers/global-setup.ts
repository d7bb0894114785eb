/**
 * The e2e project's globalSetup: installs the real model servers into `<repo>/.model-servers/` (one venv each,
 * exact pins: scripts/model-servers/install.sh; about 2 minutes the first time, a no-op after) and makes the
 * fixture models into `.model-servers/models/` (make-models.py, again only when its key changed). The installer's
 * output goes straight to the run's stdout/stderr, so a CI log shows the progress and, on a failure, why; the run
 * then fails naming the server. When everything is in place it takes well under a second.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, installedServer, modelsDir, realServerKinds, scriptsDir } from './paths';
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

/**
 * Installs what is missing and makes the fixtures (a no-op of about 0.1 s when all is in place). The e2e
 * project's globalSetup; a real-server test may call it too (in a `beforeAll` with a long timeout), so it
 * also runs where the globalSetup is not wired. Concurrent calls are safe (flock).
 */
export const ensureRealServers = (): void => {
  // Servers left by test processes that were killed before they could stop them.
  sweepStaleServers();
  for (const kind of realServerKinds)
    run(`installing ${kind}`, 'bash', [join(scriptsDir, 'install.sh'), cacheDir, kind]);
  // The fixtures depend on make-models.py and on the mlserver venv (its sklearn pickles them).
  const script = join(scriptsDir, 'make-models.py');
  const key = createHash('sha256')
    .update(readFileSync(script))
    .update(readOr(join(cacheDir, 'mlserver', 'stamp'), ''))
    .digest('hex');
  if (readOr(join(modelsDir, 'stamp'), '') === key) return;
  run('making the fixture models', installedServer('mlserver').python, [
    script,
    'all',
    modelsDir,
    '--key',
    key,
  ]);
};

export default function globalSetup(): void {
  ensureRealServers();
}
