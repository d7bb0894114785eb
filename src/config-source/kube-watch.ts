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

/**
 * A Watch for ListWatch: the client's own, on the KubeConfig `configNow()` gives at each request (rebuilt after
 * a failure, so a rotated token is used), with `allowWatchBookmarks` and `timeoutSeconds` added to the query
 * (ListWatch asks for neither). It never throws: a failure before the request (the settings, the token file) is
 * passed to `done`, as ListWatch expects, instead of rejecting a promise nobody awaits.
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
      const finish = (err: unknown): void => {
        failed ||= err !== null && err !== undefined;
        done(err);
      };
      try {
        this.config = configNow();
        const controller = await super.watch(
          path,
          { ...queryParams, ...watchQuery(timeoutSeconds) },
          (phase, object, raw) => {
            progress.event(phase === 'ERROR' ? undefined : resourceVersionOf(object));
            callback(phase, object, raw);
          },
          finish,
        );
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
