/** The /status document: every model's status and the config's last accepted and rejected reads, with no secret in it. */
import type { EffectErrorKind } from './errors';
import type { ModelSpecJson } from './model-config';
import type { ModelPhase, ModelStatus } from './model-status';
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

/** One model in /status. */
export interface ModelStatusJson {
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
  readonly durationMs?: number;
  readonly bytesDownloaded?: number;
  readonly bytesTotal?: number;
}

/** The whole /status document. */
export interface StatusDocumentJson {
  /** Whether the start-up sync is done (what /readyz answers). */
  readonly ready: boolean;
  readonly config: {
    readonly source: string;
    readonly watch?: Readonly<Record<string, string | number>>;
    readonly lastAccepted: { readonly at: string; readonly checksum?: string } | null;
    readonly lastRejected: { readonly at: string; readonly reason?: string } | null;
  };
  readonly models: ReadonlyArray<ModelStatusJson>;
}

const isoTime = (ms: number): string => new Date(ms).toISOString();

/** `status` as /status shows it: the URI through `redactUri`, the reason through `redact`. */
export const modelStatusJson = (status: ModelStatus): ModelStatusJson => {
  const { modelName, phase, spec, since, errorKind, reason, attempt } = status;
  const shownSpec = spec !== undefined && spec !== unknownSpec ? specToJson(spec) : undefined;
  return {
    model: modelName,
    phase,
    ...(since !== undefined ? { since: isoTime(since) } : {}),
    ...(shownSpec ? { spec: { ...shownSpec, storageUri: redactUri(shownSpec.storageUri) } } : {}),
    attempts: attempt ?? 0,
    ...(errorKind !== undefined ? { error: { kind: errorKind, reason: redact(reason ?? '') } } : {}),
    ...(status.durationMs !== undefined ? { durationMs: status.durationMs } : {}),
    ...(status.bytesDownloaded !== undefined ? { bytesDownloaded: status.bytesDownloaded } : {}),
    ...(status.bytesTotal !== undefined ? { bytesTotal: status.bytesTotal } : {}),
  };
};

/** The config part of /status, times as ISO 8601 and the rejection's reason redacted. */
export const configStateJson = (config: ConfigState): StatusDocumentJson['config'] => ({
  source: config.source,
  ...(config.watch !== undefined ? { watch: config.watch } : {}),
  lastAccepted: config.lastAccepted ? { ...config.lastAccepted, at: isoTime(config.lastAccepted.at) } : null,
  lastRejected: config.lastRejected
    ? {
        at: isoTime(config.lastRejected.at),
        ...(config.lastRejected.reason !== undefined ? { reason: redact(config.lastRejected.reason) } : {}),
      }
    : null,
});

const byName = (a: ModelStatus, b: ModelStatus): number =>
  a.modelName < b.modelName ? -1 : a.modelName > b.modelName ? 1 : 0;

const shown = (statuses: Iterable<ModelStatus>): ModelStatus[] =>
  [...statuses].filter((status) => status.phase !== 'Removed').sort(byName);

/** The /status document: the models sorted by name (a Removed one is gone), then the config. */
export const statusDocument = (
  statuses: Iterable<ModelStatus>,
  config: ConfigState,
  ready: boolean,
): StatusDocumentJson => ({
  ready,
  config: configStateJson(config),
  models: shown(statuses).map(modelStatusJson),
});

/**
 * The /status document as JSON text, each model's text from `modelText` (by default its JSON): a caller that
 * keeps each status's text while the status is unchanged renders 10,000 models in a few ms.
 */
export const statusDocumentText = (
  statuses: Iterable<ModelStatus>,
  config: ConfigState,
  ready: boolean,
  modelText: (status: ModelStatus) => string = (status) => JSON.stringify(modelStatusJson(status)),
): string => {
  const head = JSON.stringify({ ready, config: configStateJson(config) }).slice(0, -1);
  return `${head},"models":[${shown(statuses).map(modelText).join(',')}]}`;
};
