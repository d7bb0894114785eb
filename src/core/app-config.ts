/** AppConfig: the decoded command line (flags, or their MODELSYNC_* env vars); bad values are errors, not defaults. */
import * as t from 'io-ts';

const integerIn = (name: string, min: number, max: number) =>
  new t.Type<number, string, unknown>(
    name,
    (u): u is number => typeof u === 'number' && Number.isInteger(u) && u >= min && u <= max,
    (u, context) => {
      const n = typeof u === 'number' ? u : typeof u === 'string' && /^\s*\d+\s*$/.test(u) ? Number(u) : NaN;
      return Number.isInteger(n) && n >= min && n <= max
        ? t.success(n)
        : t.failure(u, context, `expected a whole number from ${min} to ${max}, got ${JSON.stringify(u)}`);
    },
    String,
  );

const oneOf = <T extends string>(name: string, values: ReadonlyArray<T>) =>
  new t.Type<T, string, unknown>(
    name,
    (u): u is T => typeof u === 'string' && (values as ReadonlyArray<string>).includes(u),
    (u, context) =>
      typeof u === 'string' && (values as ReadonlyArray<string>).includes(u)
        ? t.success(u as T)
        : t.failure(u, context, `expected one of ${values.join(', ')}, got ${JSON.stringify(u)}`),
    String,
  );

const nonEmpty = new t.Type<string, string, unknown>(
  'NonEmptyString',
  (u): u is string => typeof u === 'string' && u.length > 0,
  (u, context) =>
    typeof u === 'string' && u.length > 0 ? t.success(u) : t.failure(u, context, 'must not be empty'),
  String,
);

const httpUrl = new t.Type<string, string, unknown>(
  'HttpUrl',
  (u): u is string => typeof u === 'string',
  (u, context) => {
    if (typeof u === 'string' && /^https?:\/\/[^/]+/.test(u) && URL.canParse(u))
      return t.success(u.replace(/\/+$/, ''));
    return t.failure(
      u,
      context,
      `expected an http(s) URL such as http://127.0.0.1:8080, got ${JSON.stringify(u)}`,
    );
  },
  String,
);

export const logLevelValues = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const protocolValues = ['v2', 'torchserve'] as const;

/** Every setting of a modelsync process. Field names are the camelCase flag names. */
export const AppConfig = t.intersection(
  [
    t.type({
      configDir: nonEmpty,
      modelDir: nonEmpty,
      serverUrl: httpUrl,
      protocol: oneOf('Protocol', protocolValues),
      downloadConcurrency: integerIn('DownloadConcurrency', 1, 256),
      loadConcurrency: integerIn('LoadConcurrency', 1, 256),
      dryRun: t.boolean,
      once: t.boolean,
      logLevel: oneOf('LogLevel', logLevelValues),
      settleMs: integerIn('SettleMs', 60, 60_000),
      watchPollMs: integerIn('WatchPollMs', 0, 3_600_000),
      requestTimeoutMs: integerIn('RequestTimeoutMs', 100, 3_600_000),
      loadTimeoutMs: integerIn('LoadTimeoutMs', 100, 86_400_000),
      retryBaseMs: integerIn('RetryBaseMs', 1, 3_600_000),
      retryMaxMs: integerIn('RetryMaxMs', 1, 86_400_000),
      maxAttempts: integerIn('MaxAttempts', 1, 1000),
    }),
    t.partial({ torchserveTokenFile: nonEmpty }),
  ],
  'AppConfig',
);
export type AppConfig = t.TypeOf<typeof AppConfig>;
