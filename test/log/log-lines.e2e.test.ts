/**
 * What a log pipeline reads from the real process (issue 27, item 10): every line on stderr is one JSON object whose
 * `level` is pino's label (`"info"`, `"warn"`, `"error"`), as Loki, Elastic, Cloud Logging and Datadog expect, not
 * pino's number (30, 40, 50); on a pipe (a container's stderr) and on a file alike, the process's warnings and the
 * last resort's lines included.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withTimeout } from '../../src/testing/wait';
import { resyncWorld, type ResyncWorld } from '../integration/resync-world';
import { cliArgs, cliPath, killAllCli, runCli } from '../helpers/cli-process';
import { useTempDir } from '../helpers/temp-dir';

let world: ResyncWorld;
// Declared before the temp dir's: hooks after a test run in the order declared, so the dir goes once no process
// writes in it any more (removed under a live CLI, it can fail ENOTEMPTY).
afterEach(async () => {
  await killAllCli();
  await world.close();
});
const tmp = useTempDir('log-lines');
beforeEach(async () => {
  world = await resyncWorld(tmp.path);
  await world.addModel('a');
  world.writeConfig(['a', 'missing']);
});

/**
 * A module preloaded into the CLI (`--require`) that does what a library may do: emit a process warning, and throw
 * in its own timer callback (the last resort logs it and the agent goes on).
 */
const misbehavingLibrary = (): string => {
  const file = join(tmp.path, 'misbehaving-library.js');
  writeFileSync(
    file,
    `setTimeout(() => process.emitWarning('a library warns', 'DeprecationWarning', 'DEP_TEST'), 0);
     setTimeout(() => { throw new Error('a library throws in its own callback'); }, 0);`,
  );
  return file;
};

/** `--once` on the world: `a` loads, `missing` fails for good (exit 1). */
const flags = (): string[] => cliArgs(world.flags({ once: true, 'max-attempts': 1 }));

/** Each stderr line parsed as JSON (a line that is not fails the test). */
const linesOf = (stderr: string): Array<Record<string, unknown>> =>
  stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** The levels the lines carry, and the lines of the misbehaving library: its warning and its uncaught error. */
const whatPipelinesRead = (stderr: string) => {
  const lines = linesOf(stderr);
  return {
    levels: new Set(lines.map((line) => line['level'])),
    library: lines
      .filter((line) => line['component'] === 'process')
      .map((line) => [line['level'], line['warning'] ?? line['origin']]),
  };
};

/** What both destinations must show. */
const expected = {
  levels: new Set(['info', 'warn', 'error']),
  library: [
    ['warn', 'DeprecationWarning'],
    ['error', 'uncaught exception'],
  ],
};

describe('the log lines of the modelsync process', () => {
  it('carry the level as its label (info, warn, error) when stderr is a pipe', async () => {
    const result = await runCli(flags(), {
      nodeFlags: ['--require', misbehavingLibrary()],
      timeoutMs: 20_000,
    });
    expect(result.code).toBe(1);
    expect(whatPipelinesRead(result.stderr.text)).toEqual(expected);
  }, 30_000);

  it('carry the level as its label when stderr is a file', async () => {
    const logFile = join(tmp.path, 'stderr.log');
    const fd = openSync(logFile, 'w');
    try {
      const child = spawn(process.execPath, ['--require', misbehavingLibrary(), cliPath, ...flags()], {
        env: { ...process.env, MODELSYNC_HTTP_PORT: '0' },
        stdio: ['ignore', 'ignore', fd],
      });
      const [code] = (await withTimeout(once(child, 'exit'), 20_000, () => 'the CLI to exit')) as [number];
      expect(code).toBe(1);
    } finally {
      closeSync(fd);
    }
    expect(whatPipelinesRead(readFileSync(logFile, 'utf8'))).toEqual(expected);
  }, 30_000);
});
