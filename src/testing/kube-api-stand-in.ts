/** startKubeApiStandIn: an API server stand-in serving one namespace's ConfigMaps: list, watch, bookmarks, 410, tokens. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startHttpServer } from './http-server';
import type {
  KubeApiChange,
  KubeApiRequest,
  KubeApiStandIn,
  KubeApiStandInOptions,
} from './kube-api-stand-in-api';

export type { KubeApiChange, KubeApiRequest, KubeApiStandIn, KubeApiStandInOptions };

interface StoredEvent {
  /** The event's line, as written to a watch. */
  readonly text: string;
  readonly version: number;
}

interface OpenWatch {
  readonly response: ServerResponse;
  readonly bookmarks: boolean;
}

/** A real API server's watch cache sends a BOOKMARK this long before a watch's `timeoutSeconds` end (cacher.go). */
const bookmarkBeforeEndMs = 2000;

const statusBody = (code: number, reason: string, message: string, details?: object): object => {
  const failure = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason };
  return { ...failure, ...(details === undefined ? {} : { details }), code };
};

/**
 * Starts the stand-in on 127.0.0.1 (a free port). It speaks what `@kubernetes/client-node`'s ListWatch uses:
 * `GET /api/v1/namespaces/<ns>/configmaps?fieldSelector=metadata.name=<name>` (a ConfigMapList with the
 * collection's resourceVersion; with `Accept: …;as=PartialObjectMetadataList;…` the items' metadata alone; with
 * `resourceVersionMatch=Exact` the current version only, 410 for an older one) and the same with `watch=true` (JSON
 * lines of ADDED, MODIFIED, DELETED, BOOKMARK and ERROR events from after `resourceVersion`, a BOOKMARK 2 s before
 * `timeoutSeconds` unless withheld, ended there), 410 Gone for a compacted version, 401 for a wrong bearer token, 403 as
 * `system:anonymous` for none, and 403 naming the token's user without the field selector (a Role restricted by
 * `resourceNames`). What it answers in these cases is checked against a real API server
 * (test/control-plane/kube-api-stand-in-probe.e2e.test.ts).
 */
export const startKubeApiStandIn = async (options: KubeApiStandInOptions): Promise<KubeApiStandIn> => {
  const collection = `/api/v1/namespaces/${options.namespace}/configmaps`;
  let token = options.token;
  const user = options.user ?? `system:serviceaccount:${options.namespace}:modelsync`;
  let version = 1;
  let current: object | undefined;
  let compactedBefore = 0;
  let expiredAs: 'event' | 'status' = 'event';
  let hanging = false;
  let withholding = false;
  let redirectTo: string | undefined;
  let watchesForbidden = false;
  let down = false;
  const history: StoredEvent[] = [];
  const watches = new Set<OpenWatch>();
  const requests: KubeApiRequest[] = [];

  const configMap = (data: Readonly<Record<string, string>>, resourceVersion: number): object => ({
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: options.name, namespace: options.namespace, resourceVersion: String(resourceVersion) },
    data,
  });
  const line = (type: string, object: object): string => `${JSON.stringify({ type, object })}\n`;
  const bookmarkLine = (): string =>
    line('BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String(version) } });
  const json = (res: ServerResponse, status: number, body: object): void =>
    void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));

  const record = (kind: KubeApiRequest['kind'], query: Record<string, string>, status: number): void =>
    void requests.push({ kind, query, status });
  /** Records the request and answers it with a failure Status. */
  type Refusal = [code: number, reason: string, message: string, details?: object];
  const refuse = (
    res: ServerResponse,
    kind: KubeApiRequest['kind'],
    query: Record<string, string>,
    ...[code, reason, message, details]: Refusal
  ): void => {
    record(kind, query, code);
    json(res, code, statusBody(code, reason, message, details));
  };

  const openWatch = (req: IncomingMessage, res: ServerResponse, query: Record<string, string>): void => {
    const from = Number(query['resourceVersion'] ?? '0');
    if (from !== 0 && from < compactedBefore) {
      const message = `too old resource version: ${from} (${version})`;
      if (expiredAs === 'status') return refuse(res, 'watch', query, 410, 'Expired', message);
      // As a real API server: the watch opens, says 410 in an ERROR event, and ends.
      record('watch', query, 200);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      return void res.end(line('ERROR', statusBody(410, 'Expired', message)));
    }
    if (watchesForbidden) {
      const message = `configmaps "${options.name}" is forbidden: User "${user}" cannot watch resource "configmaps" in API group "" in the namespace "${options.namespace}"`;
      return refuse(res, 'watch', query, 403, 'Forbidden', message, {
        name: options.name,
        kind: 'configmaps',
      });
    }
    if (redirectTo !== undefined) {
      record('watch', query, 307);
      return void res.writeHead(307, { Location: `${redirectTo}${req.url ?? ''}` }).end();
    }
    record('watch', query, 200);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (hanging) return void watches.add({ response: res, bookmarks: false });
    // A version the store has not reached (after a restore): a real watch cache sends nothing until it is.
    const bookmarks = !withholding && query['allowWatchBookmarks'] === 'true' && from <= version;
    const watch: OpenWatch = { response: res, bookmarks };
    if (from === 0) {
      if (current !== undefined) res.write(line('ADDED', current));
    } else for (const event of history.filter((e) => e.version > from)) res.write(event.text);
    watches.add(watch);
    const timeoutMs = Number(query['timeoutSeconds'] ?? '0') * 1000;
    // As a real server's watch cache: a BOOKMARK at the current version 2 s before the end (at once for a shorter
    // watch). A real one may send another as it ends, or not, by its timer's tick: the stand-in does not.
    const timers =
      timeoutMs > 0
        ? [
            setTimeout(
              () => {
                if (watch.bookmarks && watches.has(watch)) res.write(bookmarkLine());
              },
              Math.max(0, timeoutMs - bookmarkBeforeEndMs),
            ),
            setTimeout(() => end(watch), timeoutMs),
          ]
        : [];
    res.on('close', () => {
      for (const timer of timers) clearTimeout(timer);
      watches.delete(watch);
    });
    req.on('close', () => watches.delete(watch));
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'https://stand-in');
    const query = Object.fromEntries(url.searchParams);
    const kind = url.pathname !== collection ? 'other' : query['watch'] === 'true' ? 'watch' : 'list';
    if (down) return refuse(res, kind, query, 503, 'ServiceUnavailable', 'the API server is unavailable');
    if (req.headers.authorization === undefined) {
      // No credentials: a real API server (anonymous auth on) takes the request as system:anonymous, which RBAC
      // refuses, with this Status (responsewriters.forbiddenMessage).
      const verb = kind === 'watch' ? 'watch' : 'list';
      const message = `configmaps is forbidden: User "system:anonymous" cannot ${verb} resource "configmaps" in API group "" in the namespace "${options.namespace}"`;
      return refuse(res, kind, query, 403, 'Forbidden', message, { kind: 'configmaps' });
    }
    if (req.headers.authorization !== `Bearer ${token}`)
      return refuse(res, kind, query, 401, 'Unauthorized', 'Unauthorized');
    if (kind === 'other' || req.method !== 'GET')
      return refuse(res, kind, query, 404, 'NotFound', 'the server could not find the requested resource');
    if (query['fieldSelector'] !== `metadata.name=${options.name}`) {
      const verb = kind === 'watch' ? 'watch' : 'list';
      const message = `configmaps is forbidden: User "${user}" cannot ${verb} resource "configmaps" in API group "" in the namespace "${options.namespace}"`;
      return refuse(res, kind, query, 403, 'Forbidden', message, { kind: 'configmaps' });
    }
    if (kind === 'watch') return openWatch(req, res, query);
    if (/;as=PartialObjectMetadataList;/.test(req.headers.accept ?? '')) {
      record('metadata', query, 200);
      return json(res, 200, {
        kind: 'PartialObjectMetadataList',
        apiVersion: 'meta.k8s.io/v1',
        metadata: { resourceVersion: String(version) },
        items:
          current === undefined
            ? []
            : [
                {
                  kind: 'PartialObjectMetadata',
                  apiVersion: 'meta.k8s.io/v1',
                  metadata: (current as { metadata: object }).metadata,
                },
              ],
      });
    }
    if (query['resourceVersionMatch'] === 'Exact' && query['resourceVersion'] !== String(version)) {
      // A list of a past snapshot: the stand-in keeps none (a real server may still have it, or answer the same).
      return refuse(
        res,
        'list',
        query,
        410,
        'Expired',
        `too old resource version: ${query['resourceVersion']}`,
      );
    }
    record('list', query, 200);
    json(res, 200, {
      kind: 'ConfigMapList',
      apiVersion: 'v1',
      metadata: { resourceVersion: String(version) },
      // A real list's items carry no kind or apiVersion; a watch event's object does.
      items: current === undefined ? [] : [{ ...current, kind: undefined, apiVersion: undefined }],
    });
  };

  const server = await startHttpServer(handle, { tls: options.tls });

  const end = (watch: OpenWatch): void => {
    watches.delete(watch);
    watch.response.end();
  };

  const emitText = (text: string): KubeApiChange => {
    history.push({ text, version });
    for (const watch of watches) if (!hanging) watch.response.write(text);
    return { resourceVersion: String(version), sentAt: performance.now(), watchers: watches.size };
  };
  const emit = (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: object): KubeApiChange =>
    emitText(line(type, object));

  return {
    url: server.url,
    requests,
    openWatches: () => watches.size,
    apply: (data) => {
      version += 1;
      const type = current === undefined ? 'ADDED' : 'MODIFIED';
      current = configMap(data, version);
      return emit(type, current);
    },
    remove: () => {
      version += 1;
      const metadata = { name: options.name, namespace: options.namespace, resourceVersion: String(version) };
      const gone = { ...(current ?? configMap({}, version)), metadata };
      current = undefined;
      return emit('DELETED', gone);
    },
    withholdBookmarks: (withhold) => void (withholding = withhold),
    bookmark: () => {
      version += 1; // other objects moved the store on: the bookmark carries its version
      for (const watch of watches) if (watch.bookmarks) watch.response.write(bookmarkLine());
    },
    sendRaw: (text) => {
      for (const watch of watches) watch.response.write(text);
    },
    storeRaw: (text) => {
      version += 1;
      return emitText(text);
    },
    expire: (as) => {
      // Other objects moved the store on meanwhile; every version before the current one is compacted away.
      version += 1;
      compactedBefore = version;
      expiredAs = as;
      for (const watch of watches) {
        if (as === 'event') {
          watch.response.write(line('ERROR', statusBody(410, 'Expired', 'too old resource version')));
        }
        end(watch);
      }
    },
    restore: (to, data) => {
      version = to;
      history.length = 0;
      compactedBefore = 0;
      current = configMap(data, version);
      for (const watch of watches) watch.response.socket?.destroy();
      watches.clear();
    },
    dropWatches: (how) => {
      for (const watch of watches) {
        if (how === 'end') end(watch);
        else {
          watches.delete(watch);
          watch.response.socket?.destroy();
        }
      }
    },
    hangWatches: (hang) => void (hanging = hang),
    forbidWatches: (forbid) => void (watchesForbidden = forbid),
    redirectWatches: (location) => void (redirectTo = location),
    setDown: (isDown) => {
      down = isDown;
      if (!isDown) return;
      for (const watch of watches) watch.response.socket?.destroy();
      watches.clear();
    },
    setToken: (next) => void (token = next),
    close: () => server.close(),
  };
};
