/** The /status document: every model's status and the config's last accepted and rejected reads, with no secret in it. */
import type { EffectErrorKind } from './errors';
import type { ModelSpecJson } from './model-config';
import type { ModelPhase, ModelStatus } from './model-status';
import { partitionPoint } from './partition-point';
import { redact, redactUri } from './redact';
import { specToJson, unknownSpec } from './snapshot';

/** What the agent knows of its config reads, and where the config comes from. */
export interface ConfigState {
  /** The config source in force: `config-dir` or `kube-api`. */
  readonly source: string;
  /** With `kube-api`: how its watch is doing (the ConfigMap, resourceVersions, restarts, re-lists, failures). */
  readonly watch?: Readonly<Record<string, string | number>>;
  /** The last read that was accepted: when (ms since the epoch) and the sha256 of its text. */
  readonly lastAccepted?: { readonly at: number; readonly checksum?: string };
  /** The last read that was rejected: when and why (the last good config stayed in force). */
  readonly lastRejected?: { readonly at: number; readonly reason?: string };
}

/**
 * The most of one reason /status shows, in UTF-8 bytes. A reason may quote a server's error page (up to 64 KiB):
 * 500 failed models made a 32 MB document each client fetched. The log line of the failure has the whole text.
 */
export const maxShownReasonBytes = 2048;

const utf8 = new TextEncoder();

/**
 * `reason` redacted (first: a secret across the cut is not shown in part), then, past `maxShownReasonBytes`, cut
 * after its last whole character within them (`encodeInto` takes only whole characters), with a mark saying so.
 */
const shownReason = (reason: string): string => {
  const text = redact(reason);
  if (text.length * 3 <= maxShownReasonBytes) return text; // no UTF-16 unit is more than 3 bytes of UTF-8
  const total = utf8.encode(text).length;
  if (total <= maxShownReasonBytes) return text;
  const mark = `… (cut: ${total} bytes in all, the log line has more)`;
  const room = new Uint8Array(maxShownReasonBytes - 3 * mark.length); // the mark's bytes, generously
  return `${text.slice(0, utf8.encodeInto(text, room).read)}${mark}`;
};

/** One model in /status (the figures as ModelStatus has them). */
export interface ModelStatusJson extends Pick<
  ModelStatus,
  'durationMs' | 'bytesDownloaded' | 'bytesTotal' | 'filesFrom'
> {
  readonly model: string;
  readonly phase: ModelPhase;
  /** When it entered `phase` (ISO 8601); absent for a model found in place at start and not touched since. */
  readonly since?: string;
  /** The spec worked towards, its storage URI without credentials (absent while removing). */
  readonly spec?: ModelSpecJson;
  /** Attempts of the current step (Retrying, Failed); 0 otherwise. */
  readonly attempts: number;
  /** The failure that made it Retrying or Failed. */
  readonly error?: { readonly kind: EffectErrorKind; readonly reason: string };
}

/** Which models one /status answer lists: at most `limit`, those named after `after`, of `phase` if given. */
export interface StatusQuery {
  readonly limit: number;
  readonly after?: string;
  readonly phase?: ModelPhase;
}

/** Every model modelsync knows, counted by phase, whichever page is shown. */
export interface StatusSummary {
  readonly models: number;
  readonly phases: Readonly<Partial<Record<ModelPhase, number>>>;
}

/** The page one /status answer is: its query, and `next`, the `after` of the next page, while more follow. */
export interface StatusPageJson extends StatusQuery {
  readonly next?: string;
}

/** The phases a model shows in (Removed is not shown: the model is gone), in the order work moves through them. */
export const shownPhases: ReadonlyArray<ModelPhase> = [
  'Pending',
  'Downloading',
  'Loading',
  'Loaded',
  'Unloading',
  'Retrying',
  'Failed',
];

/** The whole /status document. */
export interface StatusDocumentJson {
  /** Whether the start-up sync is done (what /readyz answers). */
  readonly ready: boolean;
  readonly summary: StatusSummary;
  readonly page: StatusPageJson;
  readonly config: {
    readonly source: string;
    readonly watch?: Readonly<Record<string, string | number>>;
    readonly lastAccepted: { readonly at: string; readonly checksum?: string } | null;
    readonly lastRejected: { readonly at: string; readonly reason?: string } | null;
  };
  readonly models: ReadonlyArray<ModelStatusJson>;
}

const isoTime = (ms: number): string => new Date(ms).toISOString();

/**
 * `status` as /status shows it: the URI through `redactUri`, the reason through `redact`. A field left undefined
 * is absent from the JSON text (the only way out: JSON.stringify drops it).
 */
export const modelStatusJson = (status: ModelStatus): ModelStatusJson => {
  const { modelName, phase, spec, since, errorKind, reason, attempt } = status;
  const shownSpec = spec !== undefined && spec !== unknownSpec ? specToJson(spec) : undefined;
  return {
    model: modelName,
    phase,
    since: since === undefined ? undefined : isoTime(since),
    spec: shownSpec && { ...shownSpec, storageUri: redactUri(shownSpec.storageUri) },
    attempts: attempt ?? 0,
    error: errorKind === undefined ? undefined : { kind: errorKind, reason: shownReason(reason ?? '') },
    durationMs: status.durationMs,
    bytesDownloaded: status.bytesDownloaded,
    bytesTotal: status.bytesTotal,
    filesFrom: status.filesFrom,
  };
};

/** The config part of /status, times as ISO 8601 and the rejection's reason redacted. */
export const configStateJson = ({
  source,
  watch,
  lastAccepted,
  lastRejected,
}: ConfigState): StatusDocumentJson['config'] => ({
  source,
  watch,
  lastAccepted: lastAccepted ? { ...lastAccepted, at: isoTime(lastAccepted.at) } : null,
  lastRejected: lastRejected
    ? { at: isoTime(lastRejected.at), reason: lastRejected.reason && shownReason(lastRejected.reason) }
    : null,
});

const byName = (a: ModelStatus, b: ModelStatus): number =>
  a.modelName < b.modelName ? -1 : a.modelName > b.modelName ? 1 : 0;

/** The statuses /status shows: sorted by name, a Removed one gone. */
export const shownStatuses = (statuses: Iterable<ModelStatus>): ReadonlyArray<ModelStatus> =>
  [...statuses].filter((status) => status.phase !== 'Removed').sort(byName);

/** `shown` counted by phase. */
export const statusSummary = (shown: ReadonlyArray<ModelStatus>): StatusSummary => {
  const phases: Partial<Record<ModelPhase, number>> = {};
  for (const { phase } of shown) phases[phase] = (phases[phase] ?? 0) + 1;
  return { models: shown.length, phases };
};

/** The models of one page of `shown` (sorted by name), and the `after` of the next page when more follow. */
export const statusPage = (
  shown: ReadonlyArray<ModelStatus>,
  query: StatusQuery,
  cursorOf: (name: string) => string = (name) => name,
): { readonly models: ReadonlyArray<ModelStatus>; readonly page: StatusPageJson } => {
  const models: ModelStatus[] = [];
  let more = false;
  const { after } = query; // `shown` is sorted by name: the page starts at the first named after `after`
  const start = after === undefined ? 0 : partitionPoint(shown, (status) => status.modelName <= after);
  for (let at = start; at < shown.length; at++) {
    const status = shown[at]!;
    if (query.phase !== undefined && status.phase !== query.phase) continue;
    if (models.length === query.limit) {
      more = true;
      break;
    }
    models.push(status);
  }
  const last = more ? models.at(-1)?.modelName : undefined;
  const next = last === undefined ? undefined : cursorOf(last);
  return { models, page: { ...query, ...(next !== undefined ? { next } : {}) } };
};

/**
 * One page of the /status document as JSON text, from statuses already `shownStatuses` and their `summary`, each
 * model's text from `modelText` (by default its JSON): a caller that keeps each status's text while the status is
 * unchanged, and the sorted statuses while none changes, makes a page in time linear in the page, not the models.
 * `cursorOf` makes `page.next` of the page's last model name (by default the name).
 */
export const statusDocumentText = (
  shown: ReadonlyArray<ModelStatus>,
  summary: StatusSummary,
  config: ConfigState,
  ready: boolean,
  query: StatusQuery,
  modelText: (status: ModelStatus) => string = (status) => JSON.stringify(modelStatusJson(status)),
  cursorOf?: (name: string) => string,
): string => {
  const { models, page } = statusPage(shown, query, cursorOf);
  const head = JSON.stringify({ ready, summary, page, config: configStateJson(config) }).slice(0, -1);
  return `${head},"models":[${models.map(modelText).join(',')}]}`;
};
