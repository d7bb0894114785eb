/** bookmarkingWatch: a Watch for ListWatch, asking for bookmarks and a server-side timeout, bounded, reporting progress. */
import type { KubeConfig, Watch } from '@kubernetes/client-node';
import { watchQuery } from '../core/config-map';
import { errorMessage } from '../core/errors';
import { jsonObject } from '../core/json/json-object';
import { parseAnswerJson } from '../core/json/json';
import type { KubeClientModule } from './kube-client';
import { kubeCall, KubeRelistNeeded, kubeVersionOf, maxKubeAnswerBytes } from './kube-request';

/** What a watch tells its owner: it was opened (HTTP 200), and each event's resourceVersion. */
export interface WatchProgress {
  /** False once its ListWatch was replaced: a late list result must not open a watch nobody reads. */
  wanted(): boolean;
  opened(): void;
  event(resourceVersion: string | undefined): void;
}

const metadataOf = (object: unknown): Readonly<Record<string, unknown>> | undefined =>
  jsonObject(jsonObject(object)?.['metadata']);

const objectTypes = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/** A watch line kept short for a log line (it may be megabytes). */
const shortly = (value: unknown): string => JSON.stringify(value)?.slice(0, 80) ?? 'none';

/**
 * Why a watch event of the ConfigMap `name` is none the API server sends (a known type; an object with metadata;
 * a ConfigMap if it says its kind; named `name` unless a bookmark), or why it ends the watch (an ERROR event: a
 * real API server ends the watch after one), or undefined.
 */
const eventProblem = (
  phase: unknown,
  object: unknown,
  { name, namespace }: { readonly name: string; readonly namespace: string },
): string | undefined => {
  const fields = jsonObject(object);
  if (phase === 'ERROR')
    return `an ERROR event (${fields === undefined ? 'without a Status' : `${shortly(fields['code'])} ${shortly(fields['reason'])}: ${shortly(fields['message'])}`})`;
  if (typeof phase !== 'string' || !objectTypes.has(phase)) return `an event of type ${shortly(phase)}`;
  if (fields === undefined) return `a ${phase} event without an object`;
  const metadata = metadataOf(object);
  if (metadata === undefined) return `a ${phase} event whose object has no metadata`;
  if (fields['kind'] !== undefined && fields['kind'] !== 'ConfigMap')
    return `a ${phase} event of a ${shortly(fields['kind'])}, not a ConfigMap`;
  if (phase !== 'BOOKMARK' && metadata['name'] !== name)
    return `a ${phase} event of the ConfigMap ${shortly(metadata['name'])}, not ${name}`;
  // The client's cache files an object by its namespace: one of another (or none) was dropped there, the change lost.
  if (phase !== 'BOOKMARK' && metadata['namespace'] !== namespace)
    return `a ${phase} event of a ConfigMap in the namespace ${shortly(metadata['namespace'])}, not ${namespace}`;
  // ListWatch would send it back as the next watch's query parameter, and /status would show it.
  const version = metadata['resourceVersion'];
  if (version !== undefined && kubeVersionOf(version) === undefined)
    return `a ${phase} event with a resourceVersion no API server writes`;
  return undefined;
};

/**
 * A watch that ended cleanly after lasting a while (its `timeoutSeconds`, or a proxy's or load balancer's idle
 * timeout cutting it sooner), as ListWatch is told of it: it re-opens one that ended without an event after a wait
 * doubling from 1 s to 30 s, which only an event or a bookmark resets, so against an API server that sends no
 * bookmarks, or behind a proxy that cuts watches, a quiet watch waited up to 30 s before the next (edits 30 s late,
 * a stall at the default 300 s). Its `TimeoutError` is the end of a watch that throttled itself by lasting: ListWatch
 * resets that wait and re-opens it at once, from its version. One that ends within `minWatchMs` (a server that fails
 * fast) still gets the wait, and is re-opened no sooner than `minWatchMs` after it was sent, events or not.
 */
class WatchTimedOut extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * The least a watch lasts to be re-opened at once after a clean end: client-go's reflector calls a shorter one
 * without events a "very short watch" and backs off.
 */
const minWatchMs = 1000;

/** What a resume from the same version would only meet again: the watch starts over with a list. */
const brokenWatch = (why: string): Error => new KubeRelistNeeded(`the API server's watch sent ${why}`);

/**
 * Passes each line of `body` to `line`, holding at most `maxKubeAnswerBytes` of one.
 * Linear in the bytes: a chunk is searched for a newline once (0x0A is never inside a UTF-8 character), a line
 * decoded once.
 */
const readLines = async (body: AsyncIterable<Uint8Array>, line: (text: string) => void): Promise<void> => {
  const decoder = new TextDecoder();
  let parts: Uint8Array[] = [];
  let pendingBytes = 0;
  const add = (part: Uint8Array): void => {
    pendingBytes += part.byteLength;
    if (pendingBytes > maxKubeAnswerBytes)
      throw brokenWatch(`a line of more than ${maxKubeAnswerBytes} bytes`);
    parts.push(part);
  };
  const end = (): void => {
    const text = decoder.decode(Buffer.concat(parts, pendingBytes)).trim();
    [parts, pendingBytes] = [[], 0];
    if (text !== '') line(text);
  };
  for await (const chunk of body) {
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline >= 0; newline = chunk.indexOf(0x0a, start)) {
      add(chunk.subarray(start, newline));
      end();
      start = newline + 1;
    }
    if (start < chunk.byteLength) add(chunk.subarray(start));
  }
  end();
};

/**
 * A Watch for ListWatch of the ConfigMap `watched.name`: a `kubeCall` GET with the KubeConfig `configNow()` gives (a
 * rotated token is used), asking for bookmarks and `timeoutSeconds` (ListWatch asks for neither), read here rather
 * than by the client, whose readline would buffer an endless line. What a resume would meet again ends the watch
 * with a `KubeRelistNeeded` (docs/reliability.md, Peer answers), a failure of ListWatch's handler too (called
 * unawaited: a rejection there would end the process). It never throws: every failure goes to `done` once.
 */
export const bookmarkingWatch = (
  kube: KubeClientModule,
  configNow: () => KubeConfig,
  watched: { readonly name: string; readonly namespace: string; readonly timeoutSeconds: number },
  progress: WatchProgress,
): Watch => {
  // A watch of these failed (a reset, a refused connection: the API server restarted) and none since brought an
  // event or a bookmark. A watch resumed from there that is silent for its whole timeout may be one from a version
  // the server has not reached (its etcd restored from an older backup): a real API server answers it 200 and says
  // nothing, not even a bookmark, however often it is re-opened; so it starts over with a list. A quiet watch that
  // follows no failure (a quiet store sends no bookmarks either) is re-opened at once from its version, as before.
  let afterFailure = false;
  class BookmarkingWatch extends kube.Watch {
    override async watch(
      path: string,
      queryParams: Record<string, string | number | boolean | undefined>,
      callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
      done: (err: unknown) => void,
    ): Promise<AbortController> {
      const controller = new AbortController();
      if (!progress.wanted()) return controller;
      let ended = false;
      let quiet = true;
      const finish = (err: unknown): void => {
        if (ended) return;
        ended = true;
        if (err !== null && err !== undefined && !(err instanceof WatchTimedOut)) afterFailure = true;
        controller.abort();
        done(err ?? null);
      };
      // No deadline of its own: a quiet watch is healthy (the API server bookmarks about once a minute and 2 s
      // before `timeoutSeconds`); one silent past that is runListWatch's stall timer's (`stallMsFor`).
      const onLine = (text: string): void => {
        if (ended) return;
        // Thrown: readLines rejects with it, and the watch finishes (a ConfigMap event nests 8 levels).
        const event = parseAnswerJson(text, (why) =>
          brokenWatch(why === 'no JSON' ? `a line that is no JSON (${text.slice(0, 40)})` : `a line ${why}`),
        );
        const fields = jsonObject(event) ?? {};
        const [phase, object] = [fields['type'], fields['object']];
        const problem = eventProblem(phase, object, watched);
        if (problem !== undefined) return finish(brokenWatch(problem));
        quiet = false;
        afterFailure = false;
        progress.event(kubeVersionOf(metadataOf(object)?.['resourceVersion']));
        const handlerFailed = (cause: unknown): void =>
          finish(brokenWatch(`an event its handler failed on (${errorMessage(cause).slice(0, 200)})`));
        try {
          void Promise.resolve(callback(phase as string, object, event) as unknown).catch(handlerFailed);
        } catch (cause) {
          handlerFailed(cause);
        }
      };
      const endedCleanly = (lastedMs: number): void => {
        if (quiet && afterFailure && lastedMs >= watched.timeoutSeconds * 1000)
          return finish(
            brokenWatch(
              `no event and no bookmark in ${watched.timeoutSeconds} s after it failed (a resourceVersion it ` +
                'has not reached: its etcd restored from an older backup?)',
            ),
          );
        if (lastedMs >= minWatchMs)
          return finish(new WatchTimedOut('the watch ended cleanly after lasting a while'));
        // ListWatch re-opens a watch at once after one that brought an event (each event resets its wait): a server
        // that ends every watch right after an event had 150 a second sent. None is re-opened within minWatchMs.
        const wait = setTimeout(() => finish(null), minWatchMs - lastedMs);
        controller.signal.addEventListener('abort', () => clearTimeout(wait), { once: true });
      };
      try {
        const query = { ...queryParams, watch: true, ...watchQuery(watched.timeoutSeconds) };
        const sentAt = performance.now();
        const response = await kubeCall(kube, configNow(), path, query, controller.signal);
        progress.opened();
        const body = response.body;
        if (body === null) throw brokenWatch('a 200 without a body');
        readLines(body, onLine).then(
          () => endedCleanly(performance.now() - sentAt),
          (cause: unknown) => finish(cause),
        );
      } catch (cause) {
        finish(cause);
      }
      return controller;
    }
  }
  return new BookmarkingWatch(configNow());
};
