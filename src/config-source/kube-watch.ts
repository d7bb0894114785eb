/** bookmarkingWatch: a Watch for ListWatch, asking for bookmarks and a server-side timeout, bounded, reporting progress. */
import { STATUS_CODES } from 'node:http';
import type { KubeConfig, Watch } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { watchQuery } from '../core/config-map';
import { errorMessage } from '../core/errors';
import { jsonObject } from '../core/json/json-object';
import type { KubeClientModule } from './kube-client';

/** What a watch tells its owner: it was opened (HTTP 200), and each event's resourceVersion (ERROR: none). */
export interface WatchProgress {
  /** False once its ListWatch was replaced: a late list result must not open a watch nobody reads. */
  wanted(): boolean;
  opened(): void;
  event(resourceVersion: string | undefined): void;
}

const resourceVersionOf = (object: unknown): string | undefined => {
  const metadata: unknown = jsonObject(object)?.['metadata'];
  const version: unknown =
    typeof metadata === 'object' && metadata !== null
      ? (metadata as Record<string, unknown>)['resourceVersion']
      : undefined;
  return typeof version === 'string' ? version : undefined;
};

const watchTypes = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

/** Why a watch event is none the API server sends, or undefined: a known type, and an object with metadata. */
const eventProblem = (phase: unknown, object: unknown): string | undefined => {
  if (typeof phase !== 'string' || !watchTypes.has(phase))
    return `an event of type ${JSON.stringify(phase)?.slice(0, 40) ?? 'none'}`;
  const fields = jsonObject(object);
  if (fields === undefined) return `a ${phase} event without an object`;
  if (phase === 'ERROR') return undefined;
  const metadata = fields['metadata'];
  if (typeof metadata !== 'object' || metadata === null)
    return `a ${phase} event whose object has no metadata`;
  return undefined;
};

/**
 * Longest watch line believed. A ConfigMap holds at most 1 MiB (etcd's limit); its event, JSON-escaped, a few
 * times that at worst. A line past it is a stream that never ends a line: the watch fails before it holds more.
 */
export const maxWatchLineBytes = 8 * 2 ** 20;

/** The error a watch ends with when the API server sent what none sends (ListWatch logs it and starts again). */
const brokenWatch = (why: string): Error => new Error(`the API server's watch sent ${why}`);

/**
 * The watch's lines from `body`, each passed to `line`, never holding more than `maxWatchLineBytes` of one; each
 * chunk calls `alive` (the client's idle timer). Resolves when the body ends.
 */
const readLines = async (
  body: AsyncIterable<Uint8Array>,
  line: (text: string) => void,
  alive: () => void,
): Promise<void> => {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of body) {
    alive();
    pending += decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf('\n');
    while (newline >= 0) {
      const text = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (text !== '') line(text);
      newline = pending.indexOf('\n');
    }
    if (Buffer.byteLength(pending) > maxWatchLineBytes)
      throw brokenWatch(`a line of more than ${maxWatchLineBytes} bytes`);
  }
  const last = (pending + decoder.decode()).trim();
  if (last !== '') line(last);
};

/**
 * A Watch for ListWatch: the client's own request (the KubeConfig `configNow()` gives, its TLS and token; rebuilt
 * after a failure, so a rotated token is used), with `allowWatchBookmarks` and `timeoutSeconds` added to the query
 * (ListWatch asks for neither), read by modelsync rather than by the client, so that:
 * - a line is at most `maxWatchLineBytes` (the client's readline would buffer an endless one);
 * - a redirect is refused, not followed: the token goes to the API server it was configured for and nowhere else;
 * - a line that is no event, or an event no API server sends (`eventProblem`), ends the watch as failed, and so
 *   does a failure of ListWatch's handler on an event (the client calls it without awaiting it: a rejection there
 *   would end the process).
 * It never throws: every failure, the settings and token file included, goes to `done` once, as ListWatch expects.
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
      const controller = new AbortController();
      if (!progress.wanted()) return controller;
      // The client's own setting (private in its types, 30 s by default).
      const idleMs = (this as unknown as { requestTimeoutMs?: number }).requestTimeoutMs ?? 30_000;
      let ended = false;
      let idle: NodeJS.Timeout | undefined;
      const finish = (err: unknown): void => {
        if (ended) return;
        ended = true;
        clearTimeout(idle);
        controller.abort();
        done(err ?? null);
      };
      // As the client does: no byte for requestTimeoutMs ends the watch (bookmarks keep a quiet one talking).
      const alive = (): void => {
        clearTimeout(idle);
        idle = setTimeout(
          () => finish(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
          idleMs,
        );
        idle.unref();
      };
      const onLine = (text: string): void => {
        if (ended) return;
        let event: unknown;
        try {
          event = JSON.parse(text);
        } catch {
          return finish(brokenWatch(`a line that is no JSON (${text.slice(0, 40)})`));
        }
        const fields = jsonObject(event) ?? {};
        const [phase, object] = [fields['type'], fields['object']];
        const problem = eventProblem(phase, object);
        if (problem !== undefined) return finish(brokenWatch(problem));
        progress.event(phase === 'ERROR' ? undefined : resourceVersionOf(object));
        const handlerFailed = (cause: unknown): void =>
          finish(brokenWatch(`an event its handler failed on (${errorMessage(cause).slice(0, 200)})`));
        try {
          void Promise.resolve(callback(phase as string, object, event) as unknown).catch(handlerFailed);
        } catch (cause) {
          handlerFailed(cause);
        }
      };
      try {
        const config = configNow();
        this.config = config;
        const cluster = config.getCurrentCluster();
        if (cluster === null) throw new Error('the kubeconfig has no current cluster');
        const url = new URL(cluster.server + path);
        url.searchParams.set('watch', 'true');
        for (const [key, value] of Object.entries({ ...queryParams, ...watchQuery(timeoutSeconds) }))
          if (value !== undefined) url.searchParams.set(key, String(value));
        const request = new kube.RequestContext(url.toString(), kube.HttpMethod.GET);
        await config.applySecurityAuthentication(request);
        alive();
        const response = await fetch(url, {
          method: 'GET',
          headers: request.getHeaders(),
          dispatcher: request.getDispatcher(),
          signal: controller.signal,
          redirect: 'manual',
        });
        if (response.status !== 200) {
          await response.body?.cancel().catch(() => undefined);
          const redirect = response.status >= 300 && response.status < 400;
          const error = new Error(
            redirect
              ? `HTTP ${response.status}: a redirect, not followed (the token goes only to the API server itself)`
              : response.statusText || STATUS_CODES[response.status] || `HTTP ${response.status}`,
          ) as Error & { statusCode: number };
          error.statusCode = response.status;
          throw error;
        }
        progress.opened();
        const body = response.body;
        if (body === null) throw brokenWatch('a 200 without a body');
        readLines(body, onLine, alive).then(
          () => finish(null),
          (cause: unknown) => finish(cause),
        );
        return controller;
      } catch (cause) {
        finish(cause);
        return controller;
      }
    }
  }
  return new BookmarkingWatch(configNow());
};
