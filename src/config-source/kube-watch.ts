/** bookmarkingWatch: the client's Watch, asking for bookmarks and a server-side timeout, and reporting progress. */
import type { KubeConfig, Watch } from '@kubernetes/client-node';
import { watchQuery } from '../core/config-map';
import type { KubeClientModule } from './kube-client';

/** What a watch tells its owner: it was opened (HTTP 200), and each event's resourceVersion (ERROR: none). */
export interface WatchProgress {
  /** False once its ListWatch was replaced: a late list result must not open a watch nobody reads. */
  wanted(): boolean;
  opened(): void;
  event(resourceVersion: string | undefined): void;
}

const resourceVersionOf = (object: unknown): string | undefined => {
  const metadata: unknown =
    typeof object === 'object' && object !== null
      ? (object as Record<string, unknown>)['metadata']
      : undefined;
  const version: unknown =
    typeof metadata === 'object' && metadata !== null
      ? (metadata as Record<string, unknown>)['resourceVersion']
      : undefined;
  return typeof version === 'string' ? version : undefined;
};

const watchTypes = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

const errorText = (cause: unknown): string =>
  (cause instanceof Error ? cause.message : String(cause)).slice(0, 200);

/** Why a watch event is none the API server sends, or undefined: a known type, and an object with metadata. */
const eventProblem = (phase: unknown, object: unknown): string | undefined => {
  if (typeof phase !== 'string' || !watchTypes.has(phase))
    return `an event of type ${JSON.stringify(phase)?.slice(0, 40) ?? 'none'}`;
  if (typeof object !== 'object' || object === null || Array.isArray(object))
    return `a ${phase} event without an object`;
  if (phase === 'ERROR') return undefined;
  const metadata = (object as Record<string, unknown>)['metadata'];
  if (typeof metadata !== 'object' || metadata === null)
    return `a ${phase} event whose object has no metadata`;
  return undefined;
};

/**
 * A Watch for ListWatch: the client's own, on the KubeConfig `configNow()` gives at each request (rebuilt after
 * a failure, so a rotated token is used), with `allowWatchBookmarks` and `timeoutSeconds` added to the query
 * (ListWatch asks for neither). It never throws: a failure before the request (the settings, the token file) is
 * passed to `done`, as ListWatch expects, instead of rejecting a promise nobody awaits; so is an event no API
 * server sends (see `eventProblem`) and any failure of the handler on one.
 */
export const bookmarkingWatch = (
  kube: KubeClientModule,
  configNow: () => KubeConfig,
  timeoutSeconds: number,
  progress: WatchProgress,
): Watch => {
  class BookmarkingWatch extends kube.Watch {
    override async watch(
      path: string,
      queryParams: Record<string, string | number | boolean | undefined>,
      callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
      done: (err: unknown) => void,
    ): Promise<AbortController> {
      if (!progress.wanted()) return new AbortController();
      let failed = false;
      let ended = false;
      let controller: AbortController | undefined;
      const finish = (err: unknown): void => {
        if (ended) return; // once: a watch we end ourselves is ended again by the client when we abort it
        ended = true;
        failed ||= err !== null && err !== undefined;
        done(err);
      };
      // An event no API server sends (an object without metadata, a type it does not have) ends this watch as
      // failed, so ListWatch starts again after its backoff; so does anything the handler rejects with: the
      // client calls the handler without awaiting it, and a rejection there would end the process.
      const broken = (why: string): void => {
        finish(new Error(`the API server's watch sent ${why}`));
        controller?.abort();
      };
      try {
        this.config = configNow();
        controller = await super.watch(
          path,
          { ...queryParams, ...watchQuery(timeoutSeconds) },
          (phase, object, raw) => {
            if (ended) return;
            const problem = eventProblem(phase, object);
            if (problem !== undefined) return broken(problem);
            progress.event(phase === 'ERROR' ? undefined : resourceVersionOf(object));
            try {
              void Promise.resolve(callback(phase, object, raw) as unknown).catch((cause: unknown) =>
                broken(`an event its handler failed on (${errorText(cause)})`),
              );
            } catch (cause) {
              broken(`an event its handler failed on (${errorText(cause)})`);
            }
          },
          finish,
        );
        if (ended) controller.abort();
        if (!failed) progress.opened();
        return controller;
      } catch (cause) {
        finish(cause);
        return new AbortController();
      }
    }
  }
  return new BookmarkingWatch(configNow());
};
