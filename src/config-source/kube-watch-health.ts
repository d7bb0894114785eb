/** kubeWatchProblem: whether the kube-api watch is stuck (liveness), as opposed to quiet or cut off from the server. */
import type { KubeWatchStatus } from './kube-api-source';

/**
 * Why the process's watch of the ConfigMap is stuck, or undefined while it works. Silence from the API server is
 * not stuck: a quiet watch gets no event between bookmarks, and during an outage the watch keeps retrying (which
 * `/status` and readiness report). Stuck is what restarting the process would cure: a version the watch delivered
 * that the pipeline never reads within `graceMs`, or the watch's own machinery idle for longer than its
 * re-establishing deadline (`status.stallMs`: past it the source re-lists by itself) plus `graceMs`.
 */
export const kubeWatchProblem = (
  status: KubeWatchStatus,
  now: number,
  graceMs: number,
): string | undefined => {
  if (status.unreadSince !== undefined && now - status.unreadSince > graceMs)
    return `the ConfigMap version the watch delivered ${now - status.unreadSince} ms ago has not been read`;
  if (status.lastActivityAt !== undefined && now - status.lastActivityAt > status.stallMs + graceMs)
    return `the ConfigMap watch has done nothing for ${now - status.lastActivityAt} ms (it re-establishes itself after ${status.stallMs} ms without progress)`;
  return undefined;
};
