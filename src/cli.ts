#!/usr/bin/env node
/** modelsync's process entry: flags (or MODELSYNC_* env vars) to AppConfig, one subscription, signals. */
import { Command, Option } from 'commander';
import { either as E } from 'fp-ts';
import { fromEvent, merge, take, takeUntil } from 'rxjs';
import { AppConfig, logLevelValues, protocolValues } from './core/app-config';
import { formatValidationErrors } from './core/decode-config';
import { createLogger } from './edge/logger';
import { agent, dryRun } from './production';

interface Flag {
  readonly flags: string;
  readonly description: string;
  readonly env: string;
  readonly defaultValue?: string;
  readonly choices?: ReadonlyArray<string>;
}

const flags: ReadonlyArray<Flag> = [
  {
    flags: '--config-dir <dir>',
    env: 'MODELSYNC_CONFIG_DIR',
    defaultValue: '/mnt/configs',
    description: 'directory of the mounted ConfigMap that holds models.json',
  },
  {
    flags: '--model-dir <dir>',
    env: 'MODELSYNC_MODEL_DIR',
    defaultValue: '/mnt/models',
    description: 'directory shared with the model server; models go to <dir>/<modelName>',
  },
  {
    flags: '--server-url <url>',
    env: 'MODELSYNC_SERVER_URL',
    defaultValue: 'http://127.0.0.1:8080',
    description: 'base URL of the model server (TorchServe: its management API)',
  },
  {
    flags: '--protocol <name>',
    env: 'MODELSYNC_PROTOCOL',
    defaultValue: 'v2',
    choices: protocolValues,
    description: 'load/unload dialect: v2 (Triton, MLServer, KServe) or torchserve',
  },
  {
    flags: '--download-concurrency <n>',
    env: 'MODELSYNC_DOWNLOAD_CONCURRENCY',
    defaultValue: '4',
    description: 'downloads running at once, across models',
  },
  {
    flags: '--load-concurrency <n>',
    env: 'MODELSYNC_LOAD_CONCURRENCY',
    defaultValue: '2',
    description: 'load/unload calls running at once, across models',
  },
  {
    flags: '--log-level <level>',
    env: 'MODELSYNC_LOG_LEVEL',
    defaultValue: 'info',
    choices: logLevelValues,
    description: 'log level (JSON logs go to stderr)',
  },
  {
    flags: '--settle-ms <ms>',
    env: 'MODELSYNC_SETTLE_MS',
    defaultValue: '100',
    description: 'quiet time after a burst of config events before the confirming re-read',
  },
  {
    flags: '--watch-poll-ms <ms>',
    env: 'MODELSYNC_WATCH_POLL_MS',
    defaultValue: '0',
    description: 'poll the config dir every <ms> instead of inotify (NFS, some bind mounts); 0 = inotify',
  },
  {
    flags: '--request-timeout-ms <ms>',
    env: 'MODELSYNC_REQUEST_TIMEOUT_MS',
    defaultValue: '30000',
    description: 'timeout of unload and index calls, and of a download that stops sending bytes',
  },
  {
    flags: '--load-timeout-ms <ms>',
    env: 'MODELSYNC_LOAD_TIMEOUT_MS',
    defaultValue: '300000',
    description: 'timeout of one load call',
  },
  {
    flags: '--retry-base-ms <ms>',
    env: 'MODELSYNC_RETRY_BASE_MS',
    defaultValue: '500',
    description: 'first retry delay of a transient failure (doubles, with jitter)',
  },
  {
    flags: '--retry-max-ms <ms>',
    env: 'MODELSYNC_RETRY_MAX_MS',
    defaultValue: '30000',
    description: 'cap of the retry delay',
  },
  {
    flags: '--max-attempts <n>',
    env: 'MODELSYNC_MAX_ATTEMPTS',
    defaultValue: '8',
    description: 'attempts of a transiently failing step before the model is marked failed',
  },
  {
    flags: '--torchserve-token-file <file>',
    env: 'MODELSYNC_TORCHSERVE_TOKEN_FILE',
    description: 'TorchServe key file (or plain token) for the management API, re-read on every call',
  },
];

const booleanFlags: ReadonlyArray<Flag> = [
  {
    flags: '--dry-run',
    env: 'MODELSYNC_DRY_RUN',
    description: 'print one JSON line per model op on stdout instead of applying it',
  },
  {
    flags: '--once',
    env: 'MODELSYNC_ONCE',
    description: 'with --dry-run: print the ops for the current config and exit',
  },
];

const program = new Command('modelsync')
  .description(
    'Keeps the models loaded on a model server equal to the list in a mounted ConfigMap (models.json).',
  )
  .showHelpAfterError()
  // Usage errors exit 2 like invalid values below; 1 is kept for "the config is invalid" (--once).
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
for (const flag of flags) {
  const option = new Option(flag.flags, flag.description).env(flag.env);
  if (flag.defaultValue !== undefined) option.default(flag.defaultValue);
  if (flag.choices !== undefined) option.choices(flag.choices);
  program.addOption(option);
}
for (const flag of booleanFlags) program.addOption(new Option(flag.flags, flag.description).env(flag.env));
program.parse();

const options = program.opts<Record<string, unknown>>();
const keyOf = (flag: Flag): string =>
  program.options.find((o) => o.long === flag.flags.split(' ')[0])!.attributeName();
/** How the user spelled the setting `key`: the flag, or the env var it came from. */
const spelling = (key: string): string => {
  const flag = [...flags, ...booleanFlags].find((f) => keyOf(f) === key);
  if (flag === undefined) return key;
  return program.getOptionValueSource(key) === 'env' ? flag.env : flag.flags.split(' ')[0]!;
};
const usageError = (message: string): never => {
  process.stderr.write(`modelsync: ${message}\n`);
  process.exit(2);
};

// commander sets a boolean flag from any value of its env var; read the value instead.
const truthy = ['true', '1', 'yes', 'on'];
const falsy = ['false', '0', 'no', 'off', ''];
for (const flag of booleanFlags) {
  const key = keyOf(flag);
  if (program.getOptionValueSource(key) !== 'env') {
    options[key] = options[key] === true;
    continue;
  }
  const value = (process.env[flag.env] ?? '').trim().toLowerCase();
  if (!truthy.includes(value) && !falsy.includes(value)) {
    usageError(`invalid ${flag.env}: expected true or false, got ${JSON.stringify(process.env[flag.env])}`);
  }
  options[key] = truthy.includes(value);
}

const decoded = AppConfig.decode(options);
if (E.isLeft(decoded)) {
  const lines = formatValidationErrors(decoded.left).map((error) => {
    const key = /^[A-Za-z]+/.exec(error)?.[0] ?? '';
    return `invalid ${spelling(key)}${error.slice(key.length)}`;
  });
  usageError(lines.join('\nmodelsync: '));
}
const config = (decoded as E.Right<AppConfig>).right;
const log = createLogger(config.logLevel);

/** Exits once stdout has taken every line: a pipe is written asynchronously, and exit would drop the rest. */
let exiting = false;
const exitAfterStdout = (code: number): void => {
  exiting = true;
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
};

const shutdown$ = merge(fromEvent(process, 'SIGTERM'), fromEvent(process, 'SIGINT')).pipe(take(1));
const mode$ = config.dryRun ? dryRun(config, log) : agent(config, log, process.env);

mode$.pipe(takeUntil(shutdown$)).subscribe({
  next: (output) => {
    if (output._tag === 'Line') process.stdout.write(`${output.line}\n`);
    else exitAfterStdout(output.code);
  },
  error: (error: unknown) => {
    log.fatal({ err: error }, 'modelsync stopped on an unexpected error');
    exitAfterStdout(1);
  },
  complete: () => {
    if (exiting) return;
    log.info('modelsync stopped');
    // Closing watchers and sockets is asynchronous; once stdout is drained, leave even if something lingers.
    process.stdout.write('', () => setTimeout(() => process.exit(0), 2000).unref());
  },
});
