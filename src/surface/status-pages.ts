/** StatusPages: /status and /status/<model> answered from statuses sorted once per change, not once per request. */
import type { ModelStatus } from '../core/model-status';
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
  readonly config: () => ConfigState;
  readonly ready: () => boolean;
  /** The clock (ms); Date.now by default. */
  readonly now?: () => number;
}

/** The /status pages of one agent run. */
export interface StatusPages {
  /** A status changed: the next answer sorts the statuses again. */
  readonly changed: () => void;
  /** One page of the /status document as JSON text. */
  readonly page: (query: StatusQuery) => string;
  /** One model as /status shows it; undefined for a model not shown (unknown, or Removed). */
  readonly model: (name: string) => ModelStatusJson | undefined;
}

interface Sorted {
  readonly at: number;
  readonly shown: ReadonlyArray<ModelStatus>;
  readonly summary: StatusSummary;
  readonly byName: ReadonlyMap<string, ModelStatus>;
}

/** Sorted statuses are sorted again after this even with no change heard: a safety net, not how changes arrive. */
const maxAgeMs = 1000;

/**
 * StatusPages over `source`. Copying and sorting 10,000 statuses costs milliseconds; 16 clients looping on
 * /status paid it (and made 6 MiB of text) at every request and held the probes behind them. Now a request pays
 * one page: its models' texts, each made once per status.
 */
export const statusPages = ({ statuses, config, ready, now = Date.now }: StatusSource): StatusPages => {
  const texts = new WeakMap<ModelStatus, string>(); // statuses are replaced, never changed
  const modelText = (status: ModelStatus): string => {
    const known = texts.get(status);
    if (known !== undefined) return known;
    const text = redact(JSON.stringify(modelStatusJson(status)));
    texts.set(status, text);
    return text;
  };
  let sorted: Sorted | undefined;
  const current = (): Sorted => {
    const at = now();
    if (sorted !== undefined && at - sorted.at < maxAgeMs) return sorted;
    const shown = shownStatuses(statuses());
    sorted = {
      at,
      shown,
      summary: statusSummary(shown),
      byName: new Map(shown.map((status) => [status.modelName, status])),
    };
    return sorted;
  };
  return {
    changed: () => void (sorted = undefined),
    page: (query) => {
      const { shown, summary } = current();
      return statusDocumentText(shown, summary, config(), ready(), query, modelText, pageCursor);
    },
    model: (name) => {
      const status = current().byName.get(name);
      return status === undefined ? undefined : modelStatusJson(status);
    },
  };
};
