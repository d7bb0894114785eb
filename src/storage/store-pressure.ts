/**
 * StorePressure: what a store's push-back (HTTP 429 and 503, which is how S3 says SlowDown) does to this process's
 * requests to it: a pause and fewer connections, never a tight retry (docs/storage.md, "When a store pushes back").
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { EffectError } from '../core/errors';
import { retryDelay, type RetryPolicy } from '../core/retry-policy';

/** The flags' retry policy by default (`--retry-base-ms`, `--retry-max-ms`, `--max-attempts`). */
export const defaultPushbackPolicy: RetryPolicy = { maxAttempts: 8, baseMs: 500, maxMs: 30_000 };

/** True for a store's push-back: an answer of HTTP 429 (Too Many Requests) or 503 (S3's SlowDown, a busy server). */
export const isPushback = (cause: unknown): cause is EffectError =>
  cause instanceof EffectError && (cause.status === 429 || cause.status === 503);

/** One store's push-back state in this process. */
export class StorePressure {
  private pausedUntil = 0;
  private inARow = 0;
  private allowed = Infinity;
  private connections = 0;
  private answersSinceGrown = 0;
  /** The waits after push-backs in a row, never under the base, at most its longest wait, Retry-After included. */
  private readonly waits: RetryPolicy;
  /** Push-backs in a row one request takes before it fails (the policy's attempts). */
  readonly maxPushbacks: number;

  constructor(
    policy: RetryPolicy = defaultPushbackPolicy,
    // A clock that never steps: a wall clock set back an hour mid-pause would make the pause an hour longer.
    private readonly now: () => number = () => performance.now(),
    private readonly random: () => number = Math.random,
  ) {
    this.waits = { ...policy, jitter: 'at-least-base' };
    this.maxPushbacks = Number.isFinite(policy.maxAttempts)
      ? policy.maxAttempts
      : defaultPushbackPolicy.maxAttempts;
  }

  /** Connections the store may have now (Infinity until it first pushes back). */
  get limit(): number {
    return this.allowed;
  }

  /** True while more connections are open than the store is allowed: one of them should close. */
  get crowded(): boolean {
    return this.connections > this.allowed;
  }

  /** True when one more connection may open: under the limit, and no pause running. */
  get roomy(): boolean {
    return this.connections < this.allowed && this.now() >= this.pausedUntil;
  }

  /** Counts a connection to the store from now until the returned function is called (once). */
  open(): () => void {
    this.connections++;
    return () => void this.connections--;
  }

  /** Resolves once no pause the store asked for is running (at once when none is); rejects when `signal` aborts. */
  async admit(signal: AbortSignal): Promise<void> {
    // A ref'd wait, as every wait of a download: it is the work.
    for (let waitMs = this.pausedUntil - this.now(); waitMs > 0; waitMs = this.pausedUntil - this.now())
      await sleep(waitMs, undefined, { signal });
  }

  /**
   * The store pushed back (`error`, whose Retry-After is `error.retryAfterMs` when it named one). One that comes
   * while the pause of another runs answers a request sent before it (they come in bursts): it neither halves nor
   * doubles again, and only a longer Retry-After lengthens the pause.
   */
  pushedBack(error: EffectError): void {
    const burst = this.now() < this.pausedUntil;
    if (!burst) {
      this.inARow++;
      this.answersSinceGrown = 0;
      this.allowed = Math.max(1, Math.floor(Math.min(this.allowed, Math.max(1, this.connections)) / 2));
    }
    const asked = error.retryAfterMs ?? (burst ? 0 : retryDelay(this.waits, this.inARow, this.random));
    // A Retry-After of 0 or a date past (retryAfterOf's 0) would be a tight retry: never under the base, but in a burst.
    const waitMs = Math.min(this.waits.maxMs, burst ? asked : Math.max(asked, this.waits.baseMs));
    this.pausedUntil = Math.max(this.pausedUntil, this.now() + waitMs);
  }

  /**
   * The store answered a request without pushing back: the doubling ends, and after as many answers as connections
   * allowed (a round), one more is.
   */
  answered(): void {
    this.inARow = 0;
    if (this.allowed === Infinity || ++this.answersSinceGrown < this.allowed) return;
    this.answersSinceGrown = 0;
    this.allowed++;
  }

  /**
   * `request` once any pause has passed, its push-back (thrown on) or answer told: every request to a store that
   * pushes back goes through here.
   */
  async ask<T>(signal: AbortSignal, request: () => Promise<T>): Promise<T> {
    await this.admit(signal);
    try {
      const answer = await request();
      this.answered();
      return answer;
    } catch (cause) {
      if (isPushback(cause)) this.pushedBack(cause);
      throw cause;
    }
  }
  /**
   * `request` through `ask`, asked again after each push-back (its pause waited out) up to `maxPushbacks` in a row;
   * the last push-back is thrown.
   */
  async askThroughPushbacks<T>(signal: AbortSignal, request: () => Promise<T>): Promise<T> {
    for (let pushbacks = 0; ; pushbacks++) {
      try {
        return await this.ask(signal, request);
      } catch (cause) {
        if (!isPushback(cause) || pushbacks >= this.maxPushbacks || signal.aborted) throw cause;
      }
    }
  }
}

/** How many stores a process keeps push-back state for: one more forgets the one asked least recently. */
const maxStores = 256;

/**
 * Each store's StorePressure by key (an origin, a bucket) under `policy`, made at the first ask; the least recently
 * asked forgotten past 256.
 */
export const storePressures = (policy?: RetryPolicy): ((key: string) => StorePressure) => {
  const byKey = new Map<string, StorePressure>();
  return (key) => {
    // Set again last: the Map's order is the order of the last asks.
    const pressure = byKey.get(key) ?? new StorePressure(policy);
    byKey.delete(key);
    byKey.set(key, pressure);
    if (byKey.size > maxStores) byKey.delete(byKey.keys().next().value!);
    return pressure;
  };
};
