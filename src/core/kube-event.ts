/**
 * Events about the agent's own Pod (docs/operating.md, "Kubernetes Events"): which agent events make one, the
 * v1 Event object, and client-go's correlation, which also combines what follows 10 similar events (same type
 * and reason) within 10 minutes into one that counts up. Pure: time is passed in.
 */
import type { AgentEvent } from './model-status';
import { redact, redactUri } from './redact';

export interface PodRef {
  readonly name: string;
  readonly namespace: string;
  /** The Pod's uid (the downward API's `metadata.uid`), when known: `kubectl describe pod` selects events by it. */
  readonly uid?: string;
}

/** Where a Pod's Events go: the Pod, and the two writes (config-source's `kubeEventsTarget` makes them). */
export interface KubeEventsWriter {
  readonly pod: PodRef;
  create(event: object): Promise<void>;
  /** Resolves false when the API server has no such Event any more (an Event lives an hour). */
  repeat(name: string, patch: object): Promise<boolean>;
}

export type KubeEventReason = 'ModelLoaded' | 'ModelUnloaded' | 'ModelFailed' | 'ConfigRejected';

export interface KubeEventNote {
  readonly reason: KubeEventReason;
  readonly type: 'Normal' | 'Warning';
  readonly message: string;
}

/** The API server refuses a message over 1 MiB; a reader wants a line. Longer ones are cut here. */
export const maxEventMessageChars = 1024;

/** `message` within `maxEventMessageChars`: a longer one cut after its last whole character (no lone surrogate), then `…`. */
const cut = (message: string): string => {
  if (message.length <= maxEventMessageChars) return message;
  const end = maxEventMessageChars - 1;
  const last = message.charCodeAt(end - 1);
  return `${message.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end)}…`;
};

const note = (reason: KubeEventReason, type: KubeEventNote['type'], message: string): KubeEventNote => ({
  reason,
  type,
  message: cut(redact(message)),
});

/** The event an agent event makes, if any: a model's status Loaded, Removed or Failed. */
export const kubeEventOf = (event: AgentEvent): KubeEventNote | undefined => {
  if (event._tag !== 'Status') return undefined;
  const { modelName, phase, reason, spec } = event.status;
  const model = `model ${modelName}`;
  // A lost model the server lists again was loaded by no one here (its loss made no Event either).
  if (phase === 'Loaded' && event.status.listedAgain === true) return undefined;
  // The URI as /status shows it (no user info, query or fragment): the text's URL shape stops at a space in a path.
  const from = spec === undefined ? 'its storage' : redactUri(spec.storageUri);
  if (phase === 'Loaded') return note('ModelLoaded', 'Normal', `${model} loaded from ${from}`);
  // Removed also ends a model that failed before it ever loaded: the words hold for both.
  if (phase === 'Removed')
    return note('ModelUnloaded', 'Normal', `${model} is no longer listed: unloaded, its files removed`);
  if (phase === 'Failed')
    return note('ModelFailed', 'Warning', `${model} failed: ${reason ?? 'no reason given'}`);
  return undefined;
};

/** The event a rejected config makes: the last good models stay as they are. */
export const configRejectedEvent = (reason: string): KubeEventNote =>
  note('ConfigRejected', 'Warning', `config rejected; keeping the previous models: ${reason}`);

/** An object's name is a DNS subdomain (RFC 1123), as the API server validates it: this long at most. */
const maxNameChars = 253;

/**
 * A new Event's name, as client-go's recorder makes it (the Pod's name, a dot, `unique` in hex), with the Pod's part
 * cut so that it stays a name the API server takes (a Pod named with 240 characters or more gave every write 422).
 * The part cut ends in a letter or a digit, as a subdomain's label must; the Event names the Pod in full elsewhere.
 */
export const eventName = (podName: string, unique: number): string => {
  const suffix = unique.toString(16);
  return `${podName.slice(0, maxNameChars - 1 - suffix.length).replace(/[-.]+$/, '')}.${suffix}`;
};

/** An event's time: RFC 3339 in whole seconds, as the v1 Event's timestamps are. */
const eventTime = (at: number): string => new Date(at).toISOString().replace(/\.\d+Z$/, 'Z');

/** A new v1 Event `name` about `pod`, first seen at `at` (ms since the epoch). */
export const eventObject = (pod: PodRef, name: string, event: KubeEventNote, at: number): object => {
  const time = eventTime(at);
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: pod.namespace },
    involvedObject: {
      apiVersion: 'v1',
      kind: 'Pod',
      name: pod.name,
      namespace: pod.namespace,
      ...(pod.uid === undefined ? {} : { uid: pod.uid }),
    },
    reason: event.reason,
    message: event.message,
    type: event.type,
    source: { component: 'modelsync' },
    reportingComponent: 'modelsync',
    reportingInstance: pod.name,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
};

/** The merge patch that counts an event once more, with the latest message (a combined one's changes). */
export const eventRepeat = (count: number, at: number, message: string): object => ({
  count,
  message,
  lastTimestamp: eventTime(at),
});

/** What to send for an event: a new Event, a count up of an earlier one, or nothing (the bucket is empty). */
export type EventAction =
  | { readonly _tag: 'Create'; readonly name: string; readonly event: KubeEventNote }
  | { readonly _tag: 'Repeat'; readonly name: string; readonly count: number; readonly event: KubeEventNote }
  | { readonly _tag: 'Drop' };

/** client-go's: an identical event within this long counts up the first. */
export const repeatWindowMs = 10 * 60_000;
/** client-go's: past this many similar events (same type and reason) within `repeatWindowMs`, combined. */
export const maxSimilar = 10;
const combinedPrefix = '(combined from similar events): ';
/** client-go's spam filter per Pod: this many at once, then one more per `refillMs`. */
export const eventBurst = 25;
export const refillMs = 5 * 60_000;
/** The identical events remembered at most (the oldest forgotten first). */
const maxRemembered = 4096;

interface Seen {
  readonly name: string;
  readonly count: number;
  readonly at: number;
}

/**
 * The correlation of one Pod's events: `next(event, now, freshName)` says what to send. Mutable state, no effects:
 * the recorder calls it in order, one event at a time.
 */
export class EventCorrelator {
  private readonly seen = new Map<string, Seen>();
  /** Similar events (by type and reason) seen in the current window: how many, since when. */
  private readonly similar = new Map<string, { count: number; since: number }>();
  private tokens = eventBurst;
  private refilledAt: number | undefined;

  next(event: KubeEventNote, now: number, freshName: () => string): EventAction {
    this.refill(now);
    if (this.tokens < 1) return { _tag: 'Drop' };
    this.tokens -= 1;
    const group = `${event.type}\u0000${event.reason}`;
    const similar = this.similar.get(group);
    const within = similar !== undefined && now - similar.since < repeatWindowMs;
    const count = within ? similar.count + 1 : 1;
    this.similar.set(group, { count, since: within ? similar.since : now });
    // Past `maxSimilar`, one event for them all (its key without the message), counted up, its message the latest.
    const combined = count > maxSimilar;
    const shown = combined ? { ...event, message: cut(`${combinedPrefix}${event.message}`) } : event;
    const key = combined ? group : `${group}\u0000${event.message}`;
    const before = this.seen.get(key);
    this.seen.delete(key); // re-inserted last: the Map's order is the order of use
    if (before !== undefined && now - before.at < repeatWindowMs) {
      const repeated = { name: before.name, count: before.count + 1, at: now };
      this.seen.set(key, repeated);
      return { _tag: 'Repeat', name: repeated.name, count: repeated.count, event: shown };
    }
    const name = freshName();
    this.seen.set(key, { name, count: 1, at: now });
    if (this.seen.size > maxRemembered) this.seen.delete(this.seen.keys().next().value!);
    return { _tag: 'Create', name, event: shown };
  }

  /** An event the API server no longer has (expired: its TTL is an hour): the next identical one is created anew. */
  forget(name: string): void {
    for (const [key, seen] of this.seen) if (seen.name === name) this.seen.delete(key);
  }

  private refill(now: number): void {
    this.refilledAt ??= now;
    const earned = Math.floor((now - this.refilledAt) / refillMs);
    if (earned <= 0) return;
    this.tokens = Math.min(eventBurst, this.tokens + earned);
    this.refilledAt += earned * refillMs;
  }
}
