/**
 * AppConfig, made from the flag table (`flag-table.ts`): its codec, its defaults and the settings that are each
 * valid but not together. The table's names are re-exported here, where the rest of the code finds them.
 */
import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import type { RetryPolicy } from '../retry-policy';
import { flagTable, type FlagSpec } from './flag-table';

export { switchWords } from '../switch-words';

export { flagTable, logLevels, protocols, type FlagSpec } from './flag-table';

type FlagTable = typeof flagTable;
/** A field of AppConfig: a key of the flag table. */
export type SettingField = keyof FlagTable;
/** A flag that takes a value and has no default: its setting may stay unset. */
type OptionalField = {
  [K in SettingField]: FlagTable[K] extends { arg: string; default?: undefined } ? K : never;
}[SettingField];
type Codecs<K extends SettingField> = { [F in K]: FlagTable[F]['codec'] };

/** The flag table as a list, in `--help` order. */
export const flagList: ReadonlyArray<readonly [SettingField, FlagSpec]> = Object.entries(flagTable) as Array<
  [SettingField, FlagSpec]
>;

/** A switch: a flag that takes no value (`--dry-run`). */
export const isSwitch = (spec: FlagSpec): boolean => spec.arg === undefined;

const codecsWhere = <K extends SettingField>(optional: boolean): Codecs<K> =>
  Object.fromEntries(
    flagList
      .filter(([, spec]) => (!isSwitch(spec) && spec.default === undefined) === optional)
      .map(([field, spec]) => [field, spec.codec]),
  ) as Codecs<K>;

/** Every setting of a modelsync process. Field names are the camelCase flag names. */
export const AppConfig = t.intersection(
  [
    t.type(codecsWhere<Exclude<SettingField, OptionalField>>(false)),
    t.partial(codecsWhere<OptionalField>(true)),
  ],
  'AppConfig',
);
export type AppConfig = t.TypeOf<typeof AppConfig>;

/** The text of each setting when nothing sets it: the table's defaults, switches off. */
export const defaultSettingTexts = (): Record<string, unknown> =>
  Object.fromEntries(
    flagList.flatMap(([field, spec]): Array<[string, unknown]> =>
      isSwitch(spec) ? [[field, false]] : spec.default === undefined ? [] : [[field, spec.default]],
    ),
  );

const decodedDefaults = AppConfig.decode(defaultSettingTexts());
if (E.isLeft(decodedDefaults)) throw new Error('the defaults of the flag table do not decode');

/** AppConfig with every flag at its default (what `modelsync` with no flags and no env vars runs with). */
export const defaultAppConfig: AppConfig = decodedDefaults.right;

/**
 * Settings that are each valid but not together, as one sentence each; `spell` names a field the way the user
 * set it (the flag, or its env var).
 */
/** The segments of an absolute path, `.` and `..` and repeated slashes resolved as the kernel would (no links). */
const segmentsOf = (path: string): string[] =>
  path.split('/').reduce<string[]>((kept, part) => {
    if (part === '..') kept.pop();
    else if (part !== '' && part !== '.') kept.push(part);
    return kept;
  }, []);

/** Whether the absolute path `inner` is `outer` or lies under it, as written. */
const isWithin = (outer: string, inner: string): boolean => {
  const [a, b] = [segmentsOf(outer), segmentsOf(inner)];
  return a.length <= b.length && a.every((part, i) => part === b[i]);
};

const loopbackHosts: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Whether the model server's URL is modelsync's own HTTP port on this host (`--component-port 9081` with the
 * default port): every call, and with `--component-port` every proxied request, would come back to it.
 */
const servesItself = ({ serverUrl, httpPort, httpHost }: AppConfig): boolean => {
  if (httpPort === 0) return false;
  if (httpHost !== undefined && !loopbackHosts.has(httpHost) && httpHost !== '::1') return false;
  const url = URL.parse(serverUrl);
  if (url === null || !loopbackHosts.has(url.hostname)) return false;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return port === httpPort;
};

export const conflictingSettings = (
  config: AppConfig,
  spell: (field: SettingField) => string,
): ReadonlyArray<string> => [
  ...(config.source === 'kube-api' && config.configmap === undefined
    ? [`${spell('source')} kube-api needs ${spell('configmap')}: the ConfigMap to watch`]
    : []),
  // The model server shares the model dir: a node cache there is one more model to it, and writable by it, and a
  // start removes it with whatever else no config lists. A relative model dir is not compared (no cwd here).
  ...(config.nodeCacheDir !== undefined &&
  config.modelDir.startsWith('/') &&
  isWithin(config.modelDir, config.nodeCacheDir)
    ? [
        `${spell('nodeCacheDir')} (${config.nodeCacheDir}) is in ${spell('modelDir')} (${config.modelDir}), ` +
          'which the model server shares: give the node cache a dir of its own',
      ]
    : []),
  ...(servesItself(config)
    ? [
        `${config.componentPort !== undefined ? `${spell('componentPort')} (${config.componentPort})` : `${spell('serverUrl')} (${config.serverUrl})`} ` +
          'is the port modelsync itself serves (--http-port, KServe: --port): it would send every call to the model ' +
          'server back to itself',
      ]
    : []),
  ...(config.retryBaseMs > config.retryMaxMs
    ? [
        `${spell('retryBaseMs')} (${config.retryBaseMs}) is above ${spell('retryMaxMs')} (${config.retryMaxMs}); ` +
          'the first retry delay cannot exceed the cap',
      ]
    : []),
];

/**
 * The retry policy the flags set: the loader's and the storage initializer's, `--max-attempts` in all; the start-up
 * wait and the API-server watch take its backoff without its cap (core/retry-policy.ts).
 */
export const retryPolicyOf = (config: AppConfig): RetryPolicy => ({
  maxAttempts: config.maxAttempts,
  baseMs: config.retryBaseMs,
  maxMs: config.retryMaxMs,
});
