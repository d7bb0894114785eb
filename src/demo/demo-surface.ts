/** What `npm run demo` shows of the agent's HTTP surface: /status as one line per model, and the metrics that moved. */
import { isJsonObject } from '../core/json/json-object';

type Fields = Readonly<Record<string, unknown>>;

const isFields: (value: unknown) => value is Fields = isJsonObject;

const text = (value: unknown): string | undefined =>
  typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;

/** The models of a /status document with their fields, whether it lists them or keys them by name. */
const modelsOf = (document: unknown): Array<readonly [string, Fields]> => {
  const models = isFields(document) ? document['models'] : undefined;
  if (Array.isArray(models))
    return models
      .filter(isFields)
      .map((fields) => [
        text(fields['model']) ?? text(fields['name']) ?? text(fields['modelName']) ?? '?',
        fields,
      ]);
  return isFields(models)
    ? Object.entries(models).flatMap(([name, fields]) => (isFields(fields) ? [[name, fields] as const] : []))
    : [];
};

/** One line per model of a /status document (phase, attempts, the last failure's kind and reason), then the config's. */
export const statusLines = (document: unknown): string[] => {
  const lines = modelsOf(document).map(([name, fields]) => {
    const error = isFields(fields['error']) ? fields['error'] : fields;
    const kind = text(error['errorKind']) ?? text(error['kind']);
    const reason = text(error['reason']) ?? text(error['message']);
    const failure = kind === undefined && reason === undefined ? '' : `  ${kind ?? 'error'}: ${reason ?? ''}`;
    return `${name.padEnd(8)} ${(text(fields['phase']) ?? '?').padEnd(11)} attempts ${text(fields['attempts']) ?? 0}${failure}`;
  });
  const config = isFields(document) ? document['config'] : undefined;
  return config === undefined ? lines : [...lines, `config: ${JSON.stringify(config)}`];
};

/** The `modelsync_*` samples of a Prometheus text page by name and labels, histogram buckets left out. */
export const metricSamples = (page: string): Map<string, number> =>
  new Map(
    page.split('\n').flatMap((line): Array<[string, number]> => {
      const match = /^(modelsync_\w+)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (match === null || match[1]!.endsWith('_bucket')) return [];
      return [[`${match[1]!}${match[2] ?? ''}`, Number(match[3])]];
    }),
  );

/** `name{labels} before → after` for each sample that changed or appeared, at most `limit` lines. */
export const changedMetrics = (
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  limit = 8,
): string[] => {
  const changed = [...after].filter(([key, value]) => before.get(key) !== value);
  const lines = changed.slice(0, limit).map(([key, value]) => `${key} ${before.get(key) ?? 0} → ${value}`);
  return changed.length > limit ? [...lines, `… and ${changed.length - limit} more`] : lines;
};

/** Phases a model rests in until the next change. */
const resting = new Set(['Loaded', 'Failed']);

/**
 * The surface of one agent: each `show()` reads /status and /metrics and tells what moved since the last;
 * `settled()` is true when /status has every model at rest (loaded or failed for good).
 */
export const surfaceView = (baseUrl: string): { show(): Promise<string[]>; settled(): Promise<boolean> } => {
  let last = new Map<string, number>();
  const get = async (path: string): Promise<string> => {
    const response = await fetch(`${baseUrl}${path}`, { signal: AbortSignal.timeout(5000) });
    if (!response.ok) throw new Error(`GET ${path} answered ${response.status}`);
    return response.text();
  };
  return {
    settled: async () =>
      modelsOf(JSON.parse(await get('/status'))).every(([, fields]) =>
        resting.has(text(fields['phase']) ?? ''),
      ),
    show: async () => {
      const [status, metrics] = await Promise.all([get('/status'), get('/metrics')]);
      const samples = metricSamples(metrics);
      const moved = changedMetrics(last, samples);
      last = samples;
      return [
        `GET ${baseUrl}/status`,
        ...statusLines(JSON.parse(status)).map((line) => `  ${line}`),
        `GET ${baseUrl}/metrics: ${moved.length === 0 ? 'nothing moved' : 'what moved'}`,
        ...moved.map((line) => `  ${line}`),
      ];
    },
  };
};
