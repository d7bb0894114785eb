/**
 * KServe's agent command line, as its pod webhook writes it, read the way Go's pflag reads it: the features
 * modelsync does not implement are refused by name, `--enable-puller=<bool>` is taken, and KServe's spellings
 * (`--component-port`, `--port`, `--workers`) become our settings. Pure.
 */
import type { Env } from '../core/env';
import type { AppConfig, SettingField } from '../core/flags/app-config';
import { refusedKServeFeatures } from '../core/flags/kserve-flags';

/** The values Go's `strconv.ParseBool` takes, which pflag accepts after `--flag=`. */
const goTrue: ReadonlySet<string> = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const goFalse: ReadonlySet<string> = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** The port KServe's webhook gives the agent container (`agent-port`). */
const kserveAgentPort = 9081;

/** The refused features' switches (pflag bools), which `=false` leaves off. */
const refusedSwitches: ReadonlySet<string> = new Set(['--enable-batcher', '--logger-tls-skip-verify']);

/** The flag a token spells (`--log-url` of `--log-url=x`), or undefined for a value or a short option. */
const flagOf = (token: string): string | undefined =>
  token.startsWith('--') && token.length > 2 ? token.split('=', 1)[0] : undefined;

/**
 * The arguments with KServe's switch forms made ours, or the problems: each refused feature once (named, with
 * what to change in the InferenceService) and `--enable-puller=false`. Flags after `--` are not flags.
 */
export const kserveArguments = (
  args: ReadonlyArray<string>,
): { readonly args: ReadonlyArray<string>; readonly problems: ReadonlyArray<string> } => {
  const end = args.indexOf('--');
  const flags = end === -1 ? args : args.slice(0, end);
  // `--enable-batcher=false` is pflag's way of leaving a switch off: that flag says nothing, and is dropped.
  const switchedOff = (token: string): boolean => {
    const flag = flagOf(token);
    return flag !== undefined && refusedSwitches.has(flag) && goFalse.has(token.slice(flag.length + 1));
  };
  const problems: string[] = [];
  for (const { feature, flags: featureFlags, change } of refusedKServeFeatures) {
    const given = flags.find((token) => {
      const flag = flagOf(token);
      return (
        flag !== undefined && (featureFlags as ReadonlyArray<string>).includes(flag) && !switchedOff(token)
      );
    });
    if (given !== undefined)
      problems.push(`${feature} (${flagOf(given)}) is not supported by modelsync: ${change}`);
  }
  const rewritten = flags.flatMap((token): ReadonlyArray<string> => {
    if (switchedOff(token)) return [];
    if (!token.startsWith('--enable-puller=')) return [token];
    const value = token.slice('--enable-puller='.length);
    if (goTrue.has(value)) return ['--enable-puller'];
    problems.push(
      goFalse.has(value)
        ? "--enable-puller=false (KServe's agent without its puller) is not supported: modelsync always syncs the model list"
        : `invalid --enable-puller: expected true or false, got ${JSON.stringify(value)}`,
    );
    return [];
  });
  return { args: end === -1 ? rewritten : [...rewritten, ...args.slice(end)], problems };
};

/** How a setting was given: on the command line, in its env var, or not at all; and its name as the user spelled it. */
export interface Given {
  readonly from: (field: SettingField) => 'flag' | 'env' | undefined;
  readonly spell: (field: SettingField) => string;
}

/** KServe's spelling and the setting of ours it stands for. */
const aliases = [
  ['port', 'httpPort'],
  ['workers', 'downloadConcurrency'],
] as const satisfies ReadonlyArray<readonly [SettingField, SettingField]>;

/** Which of two settings for one thing counts: a flag over an env var; given the same way, neither (a conflict). */
const winner = (given: Given, kserve: SettingField, ours: SettingField): 'kserve' | 'ours' | 'both' => {
  const [theirs, mine] = [given.from(kserve), given.from(ours)];
  if (mine === undefined || (theirs === 'flag' && mine === 'env')) return 'kserve';
  if (mine === 'flag' && theirs === 'env') return 'ours';
  return 'both';
};

/**
 * `config` with KServe's spellings taken as ours: `--component-port` names the model server, `--port` the HTTP
 * port, `--workers` the downloads at once, and queue-proxy's `REVISION_TIMEOUT_SECONDS` the proxy's timeout
 * unless `--proxy-timeout` is given. As everywhere, a flag wins over an env var; the same setting given twice the
 * same way, saying different things, is a problem. KServe's agent always serves its port: `--component-port`
 * on the command line takes 9081 over an env var's 0 (saying so in `notes`).
 */
export const withKServeSpellings = (
  config: AppConfig,
  given: Given,
  env: Env,
): {
  readonly config: AppConfig;
  readonly problems: ReadonlyArray<string>;
  readonly notes: ReadonlyArray<string>;
} => {
  const problems: string[] = [];
  const notes: string[] = [];
  let resolved: AppConfig = config;
  for (const [kserve, ours] of aliases) {
    const value = config[kserve];
    if (value === undefined || value === config[ours]) continue;
    const wins = winner(given, kserve, ours);
    if (wins === 'both')
      problems.push(`${given.spell(kserve)} and ${given.spell(ours)} say different things: give one`);
    else if (wins === 'kserve') resolved = { ...resolved, [ours]: value };
  }
  if (config.componentPort !== undefined) {
    const wins = winner(given, 'componentPort', 'serverUrl');
    if (wins === 'both')
      problems.push(
        `${given.spell('componentPort')} and ${given.spell('serverUrl')} both name the model server: give one`,
      );
    else if (wins === 'kserve')
      resolved = { ...resolved, serverUrl: `http://127.0.0.1:${config.componentPort}` };
    if (resolved.httpPort === 0) {
      const portFrom = given.from('port') ?? given.from('httpPort');
      if (given.from('componentPort') === 'flag' && portFrom === 'env') {
        resolved = { ...resolved, httpPort: kserveAgentPort };
        notes.push(
          `${given.spell('componentPort')} serves KServe's agent port: ${kserveAgentPort}, not the 0 of ` +
            `${given.from('port') === 'env' ? given.spell('port') : given.spell('httpPort')}`,
        );
      } else
        problems.push(
          `${given.spell('componentPort')} needs the agent port to proxy from: ${given.spell(given.from('port') === undefined ? 'httpPort' : 'port')} 0 turns it off`,
        );
    }
  }
  const revisionTimeout = env.REVISION_TIMEOUT_SECONDS?.trim();
  if (revisionTimeout !== undefined && revisionTimeout !== '' && given.from('proxyTimeout') === undefined) {
    const seconds = /^\d+$/.test(revisionTimeout) ? Number(revisionTimeout) : NaN;
    if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > 86_400)
      problems.push(
        `invalid REVISION_TIMEOUT_SECONDS: expected whole seconds from 1 to 86400, got ${JSON.stringify(revisionTimeout)}`,
      );
    else resolved = { ...resolved, proxyTimeout: seconds * 1000 };
  }
  return { config: resolved, problems, notes };
};
