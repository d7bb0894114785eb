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

/** How a setting was given: whether the user set it (flag or env var), and its name as they spelled it. */
export interface Given {
  readonly set: (field: SettingField) => boolean;
  readonly spell: (field: SettingField) => string;
}

/** KServe's spelling and the setting of ours it stands for. */
const aliases = [
  ['port', 'httpPort'],
  ['workers', 'downloadConcurrency'],
] as const satisfies ReadonlyArray<readonly [SettingField, SettingField]>;

/**
 * `config` with KServe's spellings taken as ours: `--component-port` names the model server, `--port` the HTTP
 * port, `--workers` the downloads at once, and queue-proxy's `REVISION_TIMEOUT_SECONDS` the proxy's timeout
 * unless `--proxy-timeout` is given; or the settings that say two things at once.
 */
export const withKServeSpellings = (
  config: AppConfig,
  given: Given,
  env: Env,
): { readonly config: AppConfig; readonly problems: ReadonlyArray<string> } => {
  const problems: string[] = [];
  let resolved: AppConfig = config;
  for (const [kserve, ours] of aliases) {
    const value = config[kserve];
    if (value === undefined) continue;
    if (given.set(ours) && config[ours] !== value)
      problems.push(`${given.spell(kserve)} and ${given.spell(ours)} say different things: give one`);
    else resolved = { ...resolved, [ours]: value };
  }
  if (config.componentPort !== undefined) {
    if (given.set('serverUrl'))
      problems.push(
        `${given.spell('componentPort')} and ${given.spell('serverUrl')} both name the model server: give one`,
      );
    else resolved = { ...resolved, serverUrl: `http://127.0.0.1:${config.componentPort}` };
    if (resolved.httpPort === 0)
      problems.push(
        `${given.spell('componentPort')} needs the agent port to proxy from: ${given.spell('httpPort')} 0 turns it off`,
      );
  }
  const revisionTimeout = env.REVISION_TIMEOUT_SECONDS?.trim();
  if (revisionTimeout !== undefined && revisionTimeout !== '' && !given.set('proxyTimeout')) {
    const seconds = /^\d+$/.test(revisionTimeout) ? Number(revisionTimeout) : NaN;
    if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > 86_400)
      problems.push(
        `invalid REVISION_TIMEOUT_SECONDS: expected whole seconds from 1 to 86400, got ${JSON.stringify(revisionTimeout)}`,
      );
    else resolved = { ...resolved, proxyTimeout: seconds * 1000 };
  }
  return { config: resolved, problems };
};
