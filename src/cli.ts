#!/usr/bin/env -S node --max-semi-space-size=1 --expose-gc --no-memory-reducer --no-concurrent-recompilation --no-wasm-tier-up --no-wasm-dynamic-tiering
/** modelsync's process entry: arguments to a mode, one subscription, signals, the exit code. */
// First: an older Node.js is told which it needs before anything it lacks is loaded.
import './required-node';
// Then the compile cache: it serves only the modules loaded after it.
import './compile-cache';
import { fromEvent, map, merge, skip, Subject, take, takeUntil, takeWhile, tap, type Observable } from 'rxjs';
import type { AppConfig } from './core/flags/app-config';
import { redact } from './core/redact';
import { homeDir, unansweredMounts } from './fs';
import { guardProcess, type Logger, logProcessWarnings, stderrLogger } from './log';
import {
  dryRunMode,
  initializerMode,
  oneShotMode,
  syncMode,
  type DownloadPair,
  type Output,
  parseArgs,
} from './command';
/** How long an exit waits for stderr to take the last log lines: a stderr nobody reads must not hold it. */
const logFlushMs = 1000;
let flushLog: (timeoutMs: number) => Promise<void> = () => Promise.resolve();

/**
 * The exit code of a process whose event loop ran dry before its mode said how the work ended: a wait nobody kept
 * alive (an unref'd timer) or a promise nothing will settle. Never 0: an init container that exits 0 has its pod
 * started without the model.
 */
const unfinishedExitCode = 70;

/** The mode's outcome once it has one: an exit code, or `stopped` when the agent ended by itself (a graceful stop). */
let outcome: number | 'stopped' | undefined;

let exitLog: Logger | undefined;

/**
 * Exits with `code`, the log lines written (or `logFlushMs` after). While a mount that stopped answering holds a
 * thread in a call, `process.exit` would wait for that call for good (Node.js joins its threads on exit): the
 * process then says so and kills itself instead (exit code 137, as a kill by the kubelet would give).
 */
const exitNow = (code: number): void => {
  const held = unansweredMounts();
  if (held.length === 0) return void flushLog(logFlushMs).then(() => process.exit(code));
  exitLog?.error(
    { dirs: held, exitCode: code },
    'exiting with SIGKILL: a call on a mount that does not answer holds a thread, and Node.js would wait for it at exit',
  );
  void flushLog(logFlushMs).then(() => process.kill(process.pid, 'SIGKILL'));
};

/** Exits once stdout has taken every line (a pipe is written asynchronously, and exit would drop the rest). */
const exitAfterStdout = (code: number): void => {
  outcome = code;
  process.exitCode = code;
  // Lines its reader never took (it went away: EPIPE) are not a success.
  process.stdout.write('', (error) => exitNow(error && code === 0 ? 1 : code));
};

/**
 * Makes the exit code follow from the work's outcome, never from the event loop running dry: until the mode has
 * one, the code is `unfinishedExitCode`, and an emptied loop is one fatal line and that exit.
 */
const exitOnlyWithAnOutcome = (log: Logger): void => {
  process.exitCode = unfinishedExitCode;
  process.on('beforeExit', () => {
    if (outcome !== undefined) return;
    log.fatal(
      { exitCode: unfinishedExitCode },
      'modelsync ran out of work before it finished (a bug: nothing was left to wait on); exiting as failed',
    );
    exitAfterStdout(unfinishedExitCode);
  });
};

/**
 * A stdout whose reader went away (`--dry-run | head -1` once head had its line): nothing more can be printed, so the
 * mode ends, exit 1. Unlistened, the write's EPIPE was an "uncaught exception" line and a dry run printed into
 * nothing for good. A mode that already has its outcome exits 1 rather than 0 (`exitAfterStdout`).
 */
const stopWhenStdoutCloses = (log: Logger): void => {
  process.stdout.once('error', (error: unknown) => {
    log.error({ err: error }, 'stdout was closed by its reader; nothing more can be printed: exiting');
    if (outcome !== undefined) return; // exitAfterStdout's last write fails too, and exits 1
    outcome = 1;
    process.exitCode = 1;
    exitNow(1);
  });
};

/** SIGHUP, listened to from the start: its default action would end the process while it waits for the server. */
const hangups$ = (): Observable<unknown> => {
  const hangup$ = new Subject<void>();
  process.on('SIGHUP', () => hangup$.next());
  return hangup$;
};

/**
 * The mode `config` asks for (the storage initializer when `pairs` are given); sync mode stops gracefully on
 * `shutdown$` by itself, the others at once.
 */
const modeOf = (
  config: AppConfig,
  pairs: ReadonlyArray<DownloadPair>,
  log: Logger,
  shutdown$: Observable<string>,
): Observable<Output> => {
  // A signal before the downloads are done is a failed initializer: the pod must not start on half a model. The
  // mode says so, naming the signal and the pair it cut.
  if (pairs.length > 0) return initializerMode(pairs, config, log, process.env, shutdown$);
  // Nor is a one-shot sync (or its dry run) a success once a signal stopped it: CI would pass on what was not done.
  // The sync drains first (its staging dirs removed), and says so itself.
  if (config.once && !config.dryRun) return oneShotMode(config, log, process.env, shutdown$);
  if (config.once)
    return failedOnSignal(dryRunMode(config, log, process.env), shutdown$, () =>
      log.error('one-shot sync: stopped by a signal before it finished; exiting as failed'),
    );
  if (config.dryRun) return dryRunMode(config, log, process.env).pipe(takeUntil(shutdown$));
  return syncMode(config, log, process.env, { shutdown$, resync$: hangups$() });
};

/** `mode$` until its exit, or exit 1 on `shutdown$` if that comes first (after `onSignal`, to say why). */
const failedOnSignal = (
  mode$: Observable<Output>,
  shutdown$: Observable<unknown>,
  onSignal: () => void = () => undefined,
): Observable<Output> => {
  const stopped$ = shutdown$.pipe(
    tap(onSignal),
    map((): Output => ({ _tag: 'Exit', code: 1 })),
  );
  return merge(mode$.pipe(takeUntil(shutdown$)), stopped$).pipe(
    takeWhile((output) => output._tag !== 'Exit', true),
  );
};

/**
 * The umask of every file and dir modelsync makes: the model server reads them as another user (deploy/base:
 * modelsync 65532, the server 1000), so they must be readable by all and writable by modelsync alone, whatever
 * umask the container gave the process. Under 077 a download's files and an archive's dirs landed 0600/0700 (the
 * server's load failed), under 000 0666 (any user on the volume could rewrite a model). What must stay private
 * (the load journal, the markers) is made 0600 by its own mode.
 */
const modelFilesUmask = 0o022;

/**
 * Gives the process a HOME where it has none: a uid no password database lists (OpenShift's random uid, 65532 in
 * the image) run without HOME. The AWS SDK's config loaders call `os.homedir()` at every request, which throws
 * there: every s3:// download failed, seven times over as a network error. `/`, as runc gives such a user: where
 * the SDK, kubectl's config and the Hub's token file are then looked for, and found missing.
 */
const giveAHome = (env: NodeJS.ProcessEnv): void => {
  if (homeDir(env) === undefined) env['HOME'] = '/';
};

const run = (
  config: AppConfig,
  pairs: ReadonlyArray<DownloadPair> = [],
  notes: ReadonlyArray<string> = [],
): void => {
  process.umask(modelFilesUmask);
  giveAHome(process.env);
  const root = stderrLogger(config.logLevel, config.logFormat);
  const log = root.log;
  exitLog = log;
  flushLog = (timeoutMs) => root.flushed(timeoutMs);
  // Before any SDK client is made: the AWS SDK warns about the Node version then.
  logProcessWarnings(log);
  guardProcess(log);
  exitOnlyWithAnOutcome(log);
  stopWhenStdoutCloses(log);
  for (const note of notes) log.warn(note);
  // SIGHUP resyncs the sync mode; the others have nothing to resync, and its default action would kill them,
  // leaving a staging dir in the initializer's dest and no exit code saying the work was not done: it stops them.
  const syncing = pairs.length === 0 && !config.once && !config.dryRun;
  const stops = syncing ? ['SIGTERM', 'SIGINT'] : ['SIGTERM', 'SIGINT', 'SIGHUP'];
  const stopSignals$ = merge(...stops.map((signal) => fromEvent(process, signal).pipe(map(() => signal))));
  // The first signal stops gracefully; a second one (an impatient operator) stops at once, cutting what runs.
  let cutShort = false;
  const secondSignal$ = stopSignals$.pipe(
    skip(1),
    tap(() => (cutShort = true)),
  );
  modeOf(config, pairs, log, stopSignals$.pipe(take(1)))
    .pipe(takeUntil(secondSignal$))
    .subscribe({
      next: (output) => {
        if (output._tag === 'Line') process.stdout.write(`${output.line}\n`);
        else exitAfterStdout(output.code);
      },
      error: (error: unknown) => {
        log.fatal({ err: error }, 'modelsync stopped on an unexpected error');
        exitAfterStdout(1);
      },
      complete: () => {
        if (outcome !== undefined) return;
        // A one-shot sync or the initializer cut short by a second signal while it drained: never a success.
        if (config.once || pairs.length > 0) {
          log.error('stopped at once on a second signal before it finished; exiting as failed');
          exitAfterStdout(1);
          return;
        }
        outcome = 'stopped';
        process.exitCode = 0;
        // Not the line of a stop that let every call finish: the server may be left mid-load (see Shutdown).
        if (cutShort)
          log.warn('modelsync stopped at once on a second signal: calls still in flight were aborted');
        else log.info('modelsync stopped');
        // Closing watchers and sockets is asynchronous; once stdout is drained, leave even if something lingers,
        // and with the log lines written, or without them after logFlushMs (stderr may not be read).
        process.stdout.write('', () => {
          setTimeout(() => exitNow(0), 2000).unref();
          void flushLog(logFlushMs);
        });
      },
    });
};

const parsed = parseArgs(process.argv, process.env);
if (parsed._tag === 'Run') run(parsed.config, [], parsed.notes);
else if (parsed._tag === 'Initialize') run(parsed.config, parsed.pairs);
else if (parsed._tag === 'UsageError') {
  // 2 for usage errors; 1 is kept for "the config is invalid" (--dry-run --once).
  // Through the redaction like every log line: a bad value is quoted, and a URL may carry credentials.
  process.stderr.write(redact(parsed.message));
  process.exitCode = parsed.exitCode;
} else process.stdout.write(parsed.text);
