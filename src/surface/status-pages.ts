/** StatusPages: /status and /status/<model> answered from statuses kept sorted as they change, not sorted per request. */
import type { ModelPhase, ModelStatus } from '../core/model-status';
import { partitionPoint } from '../core/partition-point';
import { redact } from '../core/redact';
import { pageCursor } from './page-cursor';
import {
  modelStatusJson,
  shownStatuses,
  statusDocumentText,
  statusSummary,
  type ConfigState,
  type ModelStatusJson,
  type StatusQuery,
  type StatusSummary,
} from '../core/status-document';

/** What the pages are made of: the loader's statuses, the config's reads, readiness. */
export interface StatusSource {
  readonly statuses: () => Iterable<ModelStatus>;
  /**
   * One model's status now: a running download's progress replaces it without a change told (the loader emits no
   * event per progress report), so each answer reads the downloading models' statuses again by name.
   */
  readonly status: (name: string) => ModelStatus | undefined;
  readonly config: () => ConfigState;
  readonly ready: () => boolean;
}

/** The /status pages of one agent run. */
export interface StatusPages {
  /**
   * A status changed: given, that of a model shown and staying so takes its place at once; a model added or gone, or
   * a change not given (a new loader), has the next answer read every status again.
   */
  readonly changed: (status?: ModelStatus) => void;
  /** One page of the /status document as JSON text. */
  readonly page: (query: StatusQuery) => string;
  /** One model as /status shows it; undefined for a model not shown (unknown, or Removed). */
  readonly model: (name: string) => ModelStatusJson | undefined;
}

/** The statuses shown, sorted by name, with their phases counted and each found by name: kept as they change. */
interface Shown {
  readonly sorted: ModelStatus[];
  readonly byName: Map<string, ModelStatus>;
  readonly phases: Map<ModelPhase, number>;
  /** The names shown Downloading: their progress is read again at each answer. */
  readonly downloading: Set<string>;
}

const shownOf = (statuses: Iterable<ModelStatus>): Shown => {
  const sorted = [...shownStatuses(statuses)];
  const phases = new Map(Object.entries(statusSummary(sorted).phases) as Array<[ModelPhase, number]>);
  const downloading = new Set(sorted.filter(isDownloading).map((status) => status.modelName as string));
  return { sorted, byName: new Map(sorted.map((status) => [status.modelName, status])), phases, downloading };
};

const isDownloading = (status: ModelStatus): boolean => status.phase === 'Downloading';

const count = (phases: Map<ModelPhase, number>, phase: ModelPhase, by: number): void => {
  const now = (phases.get(phase) ?? 0) + by;
  if (now === 0) phases.delete(phase);
  else phases.set(phase, now);
};

/**
 * `status` in its place in `shown` when the model is shown and stays so (a phase, a progress, a retry: the changes
 * that keep coming); false when a model comes or goes, which the next answer reads all statuses again for (a merge
 * per change would move up to every status each time, a start-up of 100,000 models in random name order).
 */
const applied = ({ sorted, byName, phases, downloading }: Shown, status: ModelStatus): boolean => {
  const name = status.modelName;
  const before = byName.get(name);
  if (before === undefined) return status.phase === 'Removed'; // one never shown stays so
  if (status.phase === 'Removed') return false;
  sorted[partitionPoint(sorted, (shown) => shown.modelName < name)] = status;
  byName.set(name, status);
  count(phases, before.phase, -1);
  count(phases, status.phase, 1);
  if (isDownloading(status)) downloading.add(name);
  else downloading.delete(name);
  return true;
};

/**
 * StatusPages over `source`. Copying and sorting the statuses at each request (16 clients looping on /status, 6 MiB of
 * text at 10,000 models) held the probes behind them, and so did sorting them again after each change of a phase or a
 * progress (100,000 models: 65-120 ms, and about as much for a map by name). Now such a change replaces one status,
 * and a request pays its page: its models' texts, each made once per status.
 */
export const statusPages = ({ statuses, status: statusNow, config, ready }: StatusSource): StatusPages => {
  const texts = new WeakMap<ModelStatus, string>(); // statuses are replaced, never changed
  const modelText = (status: ModelStatus): string => {
    const known = texts.get(status);
    if (known !== undefined) return known;
    const text = redact(JSON.stringify(modelStatusJson(status)));
    texts.set(status, text);
    return text;
  };
  let shown: Shown | undefined;
  /** The shown statuses, the downloading ones as their progress stands now (a phase change is told: it waits for it). */
  const current = (): Shown => {
    shown ??= shownOf(statuses());
    for (const name of shown.downloading) {
      const now = statusNow(name);
      if (now !== undefined && now !== shown.byName.get(name) && isDownloading(now)) applied(shown, now);
    }
    return shown;
  };
  return {
    changed: (status) => {
      if (shown !== undefined && (status === undefined || !applied(shown, status))) shown = undefined;
    },
    page: (query) => {
      const { sorted, phases } = current();
      const summary: StatusSummary = { models: sorted.length, phases: Object.fromEntries(phases) };
      return statusDocumentText(sorted, summary, config(), ready(), query, modelText, pageCursor);
    },
    model: (name) => {
      const status = current().byName.get(name);
      return status === undefined ? undefined : modelStatusJson(status);
    },
  };
};
