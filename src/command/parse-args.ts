/**
 * parseArgs: the command line and the MODELSYNC_* env vars to an AppConfig — or the help, the version, or a
 * usage error to print instead. Pure: it reads only its arguments (commander is told not to touch process.*).
 */
import type { Env } from '../core/env';
import { Command, CommanderError, Option } from 'commander';
import * as E from 'fp-ts/Either';
import type * as t from 'io-ts';
import {
  AppConfig,
  conflictingSettings,
  defaultSettingTexts,
  flagList,
  flagTable,
  isSwitch,
  type FlagSpec,
  type SettingField,
} from '../core/flags/app-config';
import { advancedFlagTopics, flagTopics, type FlagTopic } from '../core/flags/flag-topics';
import { removedFlags } from '../core/flags/removed-flags';
import { redactUri } from '../core/redact';
import { switchValue, switchWords } from '../core/switch-words';
import type { DownloadPair } from './initializer-mode';
import { kserveArguments, withKServeSpellings } from './kserve-args';
import { packageVersion } from './package-version';

/** What the command line asks for: run with a config, print the help or the version, or a usage error. */
export type ParsedArgs =
  /** `notes`: what the settings did that the user may not expect, for a warn line each once the log is up. */
  | { readonly _tag: 'Run'; readonly config: AppConfig; readonly notes?: ReadonlyArray<string> }
  /** `modelsync <uri> <dest> [<uri> <dest> …]`: KServe's storage initializer. */
  | { readonly _tag: 'Initialize'; readonly config: AppConfig; readonly pairs: ReadonlyArray<DownloadPair> }
  | { readonly _tag: 'Help'; readonly text: string }
  | { readonly _tag: 'Version'; readonly text: string }
  /** `message` is the whole text for stderr: one line per problem, then a pointer to `--help`. */
  | { readonly _tag: 'UsageError'; readonly exitCode: 2; readonly message: string };

const description =
  'Keeps the models loaded on a model server equal to the list in a mounted ConfigMap (models.json).\n' +
  "The tuning knobs (timeouts, retries, caps, streams) are listed by 'modelsync --help advanced'.";
const helpWidth = 100;

/** Help text without the docs' code marks. */
const plain = (text: string): string => text.replaceAll('`', '');

/** A flag's description in `--help`: its help, then its choices, default and env var, as commander words them. */
export const helpDescription = (spec: FlagSpec): string => {
  const details = [
    spec.choices && `choices: ${spec.choices.map((c) => JSON.stringify(c)).join(', ')}`,
    spec.default !== undefined && `default: ${JSON.stringify(spec.default)}`,
    `env: ${spec.env}`,
  ];
  return `${plain(spec.help)} (${details.filter(Boolean).join(', ')})`;
};

const specByLong = new Map<string, FlagSpec>(flagList.map(([, spec]) => [spec.flag, spec]));

/**
 * A commander program for one parse: options from the flag table, output captured, exits thrown. Every flag
 * parses; `--help` lists those under `shown`.
 */
const program = (printed: string[], shown: ReadonlyArray<FlagTopic>): Command => {
  const command = new Command('modelsync')
    .description(description)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void printed.push(text),
      writeErr: () => undefined,
      outputError: () => undefined,
      getOutHelpWidth: () => helpWidth,
      getErrHelpWidth: () => helpWidth,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    })
    .configureHelp({
      optionDescription: (option) => {
        const spec = option.long === undefined ? undefined : specByLong.get(option.long);
        return spec === undefined ? option.description : helpDescription(spec);
      },
    });
  for (const [topic, fields] of [...flagTopics, ...advancedFlagTopics]) {
    for (const spec of fields.map((field): FlagSpec => flagTable[field])) {
      const option = new Option(isSwitch(spec) ? spec.flag : `${spec.flag} <${spec.arg}>`, plain(spec.help));
      command.addOption(
        option.helpGroup(`${topic}:`).hideHelp(!shown.some(([shownTopic]) => shownTopic === topic)),
      );
    }
  }
  return command
    .argument(
      '[uri-and-dest...]',
      "as KServe's storage initializer: download each <uri> into its <dest> (pairs), then exit",
    )
    .optionsGroup('Other:')
    .version(packageVersion, '-V, --version', 'print the version and exit')
    .helpOption('-h, --help', "print this help and exit ('--help advanced': the tuning knobs)");
};

const usageError = (problems: ReadonlyArray<string>): ParsedArgs => ({
  _tag: 'UsageError',
  exitCode: 2,
  message:
    [...new Set(problems)].map((problem) => `modelsync: ${problem}\n`).join('') +
    "Try 'modelsync --help' for the flags.\n",
});

/** `--help advanced` (or `-h advanced`): the help of the tuning knobs. */
const asksAdvancedHelp = (args: ReadonlyArray<string>): boolean =>
  args.some((arg, i) => arg === 'advanced' && (args[i - 1] === '--help' || args[i - 1] === '-h'));

/** `args` up to a `--`, after which no word is a flag. */
const flagWords = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const end = args.indexOf('--');
  return end === -1 ? args : args.slice(0, end);
};

/** The flags modelsync no longer takes given as a flag or env var: one line each, naming it. */
const removedFlagsGiven = (args: ReadonlyArray<string>, env: Env): ReadonlyArray<string> =>
  removedFlags
    .flatMap(({ flag, env: name }) => [
      ...(flagWords(args).some((arg) => arg === flag || arg.startsWith(`${flag}=`)) ? [flag] : []),
      ...(env[name] !== undefined ? [name] : []),
    ])
    .map((given) => `${given} was removed: its value is fixed (docs/operating.md, "Flags removed")`);

const switchFlags: ReadonlySet<string> = new Set(
  flagList.flatMap(([, spec]) => (isSwitch(spec) ? [spec.flag] : [])),
);

/**
 * A value given to a switch, one line each: `--once=false` (which commander calls an unknown option) and
 * `--link-same-content true` (a YAML args list's habit), whose word would otherwise be read as a storage
 * initializer argument: two such words made the process download "true" into "true". Flags after `--` are not flags.
 */
const switchValuesGiven = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const flags = flagWords(args);
  return flags.flatMap((token, i) => {
    const flag = token.split('=', 1)[0]!;
    if (!switchFlags.has(flag)) return [];
    const next = flags[i + 1];
    const got =
      token !== flag
        ? JSON.stringify(token)
        : next !== undefined && switchValue(next) !== undefined
          ? `${JSON.stringify(next)} after it`
          : undefined;
    return got === undefined
      ? []
      : [`${flag} takes no value: give it alone to turn it on, or leave it out (got ${got})`];
  });
};

/** The flag table's field an io-ts error is about, from the keys of its context (never from its text). */
const fieldOf = (error: t.ValidationError): SettingField | undefined =>
  error.context.map((entry) => entry.key).find((key): key is SettingField => Object.hasOwn(flagTable, key));

/**
 * `argv` as `process.argv` holds it (node, script, then the arguments) and `env` as `process.env`. A flag wins
 * over its env var, which wins over the default. Bad values, unknown flags and conflicting settings are usage
 * errors naming the flag or env var as the user spelled it.
 */
export const parseArgs = (argv: ReadonlyArray<string>, env: Env): ParsedArgs => {
  const printed: string[] = [];
  const command = program(printed, asksAdvancedHelp(argv.slice(2)) ? advancedFlagTopics : flagTopics);
  const kserve = kserveArguments(argv.slice(2));
  if (kserve.problems.length > 0) return usageError(kserve.problems);
  const removed = removedFlagsGiven(kserve.args, env);
  if (removed.length > 0) return usageError(removed);
  const switchValues = switchValuesGiven(kserve.args);
  if (switchValues.length > 0) return usageError(switchValues);
  try {
    command.parse([...argv.slice(0, 2), ...kserve.args], { from: 'node' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.code === 'commander.helpDisplayed') return { _tag: 'Help', text: printed.join('') };
    if (error.code === 'commander.version') return { _tag: 'Version', text: printed.join('') };
    return usageError([error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ')]);
  }

  const given = command.opts<Record<string, unknown>>();
  const input = defaultSettingTexts();
  const fromEnv = new Set<SettingField>();
  const problems: string[] = [];
  for (const [field, spec] of flagList) {
    if (command.getOptionValueSource(field) === 'cli') {
      input[field] = given[field];
      continue;
    }
    const text = env[spec.env];
    if (text === undefined) continue;
    fromEnv.add(field);
    if (!isSwitch(spec)) input[field] = text;
    else if (switchValue(text) === undefined)
      problems.push(
        `invalid ${spec.env}: expected one of ${[...switchWords.on, ...switchWords.off.slice(0, -1)].join(', ')} ` +
          `or nothing, got ${JSON.stringify(text)}`,
      );
    else input[field] = switchValue(text);
  }
  const spell = (field: SettingField): string =>
    fromEnv.has(field) ? flagTable[field].env : flagTable[field].flag;
  const from = (field: SettingField): 'flag' | 'env' | undefined =>
    command.getOptionValueSource(field) === 'cli' ? 'flag' : fromEnv.has(field) ? 'env' : undefined;

  const decoded = AppConfig.decode(input);
  if (E.isLeft(decoded) || problems.length > 0) {
    const invalid = E.isLeft(decoded)
      ? decoded.left.map((error) => {
          const field = fieldOf(error);
          const expected = error.message ?? `expected ${error.context.at(-1)?.type.name ?? 'a value'}`;
          return `invalid ${field === undefined ? 'settings' : spell(field)}: ${expected}`;
        })
      : [];
    return usageError([...problems, ...invalid]);
  }
  const resolved = withKServeSpellings(decoded.right, { from, spell }, env);
  const conflicts = [...resolved.problems, ...conflictingSettings(resolved.config, spell)];
  if (conflicts.length > 0) return usageError(conflicts);
  return command.args.length === 0
    ? {
        _tag: 'Run',
        config: resolved.config,
        ...(resolved.notes.length > 0 ? { notes: resolved.notes } : {}),
      }
    : initialize(resolved.config, command.args, spell);
};

/** The storage initializer's pairs, or why the arguments are not pairs for it. */
const initialize = (
  config: AppConfig,
  args: ReadonlyArray<string>,
  spell: (field: SettingField) => string,
): ParsedArgs => {
  if (args.length % 2 === 1)
    return usageError([
      `the storage initializer takes <uri> <dest> pairs; got ${args.length} argument${args.length === 1 ? '' : 's'}`,
    ]);
  const modes = (['dryRun', 'once'] as const).filter((field) => config[field]);
  if (modes.length > 0)
    return usageError(
      modes.map(
        (field) => `${spell(field)} does not apply to the storage initializer (<uri> <dest> arguments)`,
      ),
    );
  const pairs = Array.from({ length: args.length / 2 }, (_, i) => ({
    uri: args[2 * i]!,
    dest: args[2 * i + 1]!,
  }));
  // An empty dest would resolve to the working dir (the image's /app), whose entries the download replaces.
  const destless = pairs.flatMap(({ uri, dest }, i) =>
    dest.trim() === ''
      ? [
          `the storage initializer needs a dest dir for each <uri>; pair ${i + 1} (${redactUri(uri)}) has none`,
        ]
      : [],
  );
  if (destless.length > 0) return usageError(destless);
  return { _tag: 'Initialize', config, pairs };
};
