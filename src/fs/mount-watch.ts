/**
 * mountWatch: the store's calls on a model dir whose mount stops answering (an NFS server gone, a FUSE daemon
 * stuck) end with an error instead of holding their model's work for good.
 *
 * Such a call never returns and cannot be cancelled, and each holds one of libuv's four threads. A deadline per call
 * would fail a slow but live one (deleting a big model, copying one); so while calls are pending the mount is asked a
 * cheap question instead (a stat of its root) every `checkEveryMs`. One not answered within `answerWithinMs` makes
 * the mount hung: the pending calls fail (retryably), and new ones fail at once, taking no thread, until the
 * question returns. What a call brings back after its caller was told it failed goes to its `disposeLate`.
 */
import { stat } from 'node:fs/promises';
import { retryableError } from '../core/errors';
import { within } from '../core/waits';
import { holdUnanswered } from './unanswered-mounts';

/**
 * Runs `work`, calls on the watched mount: settles as it does, or fails once the mount does not answer; what it
 * brings back after that (the mount answered late) is handed to `disposeLate` (a staging dir to remove).
 */
export type MountWatch = <T>(work: () => Promise<T>, disposeLate?: (late: T) => void) => Promise<T>;

/** How often a mount with calls pending is asked whether it answers, and how long it may take to. */
export interface MountCheck {
  /** Default 10 s. */
  readonly checkEveryMs?: number;
  /** Default 20 s: a stat of a live mount returns in milliseconds, even under heavy I/O. */
  readonly answerWithinMs?: number;
}

/** Where a watch says the mount stopped and started answering (a pino logger serves). */
export interface MountWatchLog {
  error(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface MountWatchOptions extends MountCheck {
  readonly root: string;
  /** What `root` is called in errors and log lines; default `the model dir`. */
  readonly what?: string;
  readonly log: MountWatchLog;
  /** The question (default: a stat of `root`); any answer, an error too, says the mount answers. */
  readonly ask?: () => Promise<unknown>;
}

/** A watch of the mount holding `root`. */
export const mountWatch = (options: MountWatchOptions): MountWatch => {
  const { root, log, what = 'the model dir', checkEveryMs = 10_000, answerWithinMs = 20_000 } = options;
  const ask = options.ask ?? (() => stat(root));
  const notAnswering = () =>
    retryableError(
      'timeout',
      `${what} ${root} does not answer: a stat of it has not returned within ${answerWithinMs} ms (a hung ` +
        'mount?); its calls fail until it returns',
    );
  const pending = new Set<(cause: Error) => void>();
  let hung = false;
  let asking = false;
  let timer: NodeJS.Timeout | undefined;

  const arm = (): void => {
    if (timer !== undefined || asking || pending.size === 0) return;
    timer = setTimeout(check, checkEveryMs);
    timer.unref();
  };
  const check = (): void => {
    timer = undefined;
    if (pending.size === 0) return;
    asking = true;
    const answered = ask().then(
      () => true,
      () => true,
    );
    void within(answered, answerWithinMs, () => false).then(async (inTime) => {
      if (!inTime) {
        hung = true;
        const release = holdUnanswered(root);
        log.error({ dir: root, answerWithinMs }, `${what} does not answer (a hung mount?); its calls fail`);
        for (const fail of pending) fail(notAnswering());
        pending.clear();
        await answered;
        release();
        hung = false;
        log.warn({ dir: root }, `${what} answers again`);
      }
      asking = false;
      arm();
    });
  };

  return <T>(work: () => Promise<T>, disposeLate?: (late: T) => void): Promise<T> => {
    if (hung) return Promise.reject(notAnswering());
    return new Promise<T>((resolve, reject) => {
      let told = false;
      const fail = (cause: Error): void => {
        told = true;
        reject(cause);
      };
      pending.add(fail);
      arm();
      (async () => work())()
        .then((value) => (told ? disposeLate?.(value) : resolve(value)), reject)
        .catch(() => undefined) // a disposal that throws: its caller was told of the failure already
        .finally(() => pending.delete(fail));
    });
  };
};

/**
 * One watch a root, made at its first use and kept for the process (`options` for each but the root): a mount found
 * hung fails every later call on it at once, whoever makes it. For a bounded set of roots (flags, a run's dests).
 */
export const mountWatches = (options: Omit<MountWatchOptions, 'root'>): ((root: string) => MountWatch) => {
  const watches = new Map<string, MountWatch>();
  return (root) => {
    const kept = watches.get(root) ?? mountWatch({ ...options, root });
    watches.set(root, kept);
    return kept;
  };
};
