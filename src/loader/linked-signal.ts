/** linkedSignal: an AbortSignal that follows another one for the length of one piece of work, then lets go. */

/** The controllers linked to one source now, and the one listener on the source that aborts them. */
interface Links {
  readonly controllers: Set<AbortController>;
  readonly onAbort: () => void;
}

// Per source signal, one listener however many signals are linked: a source linking one per worker (caps 64/64:
// 128 at once) would otherwise pass Node's 10-listener leak warning. Removed with the last link.
const linksBySource = new WeakMap<AbortSignal, Links>();

const linksOf = (source: AbortSignal): Links => {
  let links = linksBySource.get(source);
  if (links === undefined) {
    const controllers = new Set<AbortController>();
    const onAbort = (): void => {
      linksBySource.delete(source);
      for (const controller of controllers) controller.abort(source.reason);
    };
    links = { controllers, onAbort };
    linksBySource.set(source, links);
    source.addEventListener('abort', onAbort, { once: true });
  }
  return links;
};

const unlink = (source: AbortSignal, links: Links, controller: AbortController): void => {
  links.controllers.delete(controller);
  if (links.controllers.size > 0 || linksBySource.get(source) !== links) return;
  linksBySource.delete(source);
  source.removeEventListener('abort', links.onAbort);
};

/**
 * A signal aborted (with the same reason) as soon as `source` is, unlinked by `dispose`. Effects get this, not a
 * long-lived signal: each `AbortSignal.any` over a signal leaves a WeakRef in it for good, so the run-long signal
 * grew without bound in the soak (docs/reliability.md). `source` carries one listener, none once all are disposed.
 */
export const linkedSignal = (source: AbortSignal): { signal: AbortSignal; dispose: () => void } => {
  const controller = new AbortController();
  if (source.aborted) {
    controller.abort(source.reason);
    return { signal: controller.signal, dispose: () => undefined };
  }
  const links = linksOf(source);
  links.controllers.add(controller);
  return { signal: controller.signal, dispose: () => unlink(source, links, controller) };
};
