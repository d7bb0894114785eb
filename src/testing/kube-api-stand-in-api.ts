/** What the API server stand-in takes and what it reports: its options, the requests it saw, its changes and faults. */

/** How to start the stand-in. */
export interface KubeApiStandInOptions {
  /** PEM key and certificate: the stand-in speaks https, as an API server does. */
  readonly tls: { readonly key: string | Buffer; readonly cert: string | Buffer };
  /** The bearer token a request must carry; another gets 401, none 403 as `system:anonymous` (a real API server's default). */
  readonly token: string;
  readonly namespace: string;
  /** The ConfigMap a Role restricted by `resourceNames` would allow: any other name or no field selector is 403. */
  readonly name: string;
  /** The user the token is, named in a 403 as a real server names it (default `system:serviceaccount:<ns>:modelsync`). */
  readonly user?: string;
}

/** A request the stand-in received. */
export interface KubeApiRequest {
  /** `metadata`: a list of the metadata alone (`Accept: …;as=PartialObjectMetadataList;…`). */
  readonly kind: 'list' | 'metadata' | 'watch' | 'other';
  /** The query as sent (`resourceVersion`, `fieldSelector`, `allowWatchBookmarks`, `timeoutSeconds`, ...). */
  readonly query: Readonly<Record<string, string>>;
  /** The status answered (200 for a watch that was opened). */
  readonly status: number;
}

/** A change the stand-in made: the ConfigMap's new resourceVersion and when it was written to the open watches. */
export interface KubeApiChange {
  readonly resourceVersion: string;
  /** `performance.now()` when the event was written to the watches open then. */
  readonly sentAt: number;
  /** How many watches it was written to. */
  readonly watchers: number;
}

/** The running stand-in. */
export interface KubeApiStandIn {
  /** `https://127.0.0.1:<port>`, the kubeconfig's `server`. */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: ReadonlyArray<KubeApiRequest>;
  /** The watches open now. */
  openWatches(): number;
  /** Creates (ADDED) or replaces (MODIFIED) the ConfigMap's data. */
  apply(data: Readonly<Record<string, string>>): KubeApiChange;
  /** Deletes the ConfigMap (DELETED). */
  remove(): KubeApiChange;
  /** Moves the store's version on (as other objects' changes do) and sends a BOOKMARK at it to watches that asked. */
  bookmark(): void;
  /**
   * From now on, watches opened get no BOOKMARK, though they ask for them (an API server whose watch cache is off,
   * or an aggregated or proxied one that ignores `allowWatchBookmarks`); they still end at `timeoutSeconds`.
   */
  withholdBookmarks(withhold: boolean): void;
  /** Writes `text` as it is to every open watch (a hostile or broken API server: a line no real one sends). */
  sendRaw(text: string): void;
  /**
   * Keeps `text` in the history as the next version's event (the ConfigMap itself does not change): written as it is
   * to every open watch now and to every watch resuming from before it, as a server replays what it holds.
   */
  storeRaw(text: string): KubeApiChange;
  /**
   * From now on, a watch request is refused with 403 as RBAC refuses a Role that allows `get` and `list` but not
   * `watch` (lists are answered as usual); false: watches are opened again.
   */
  forbidWatches(forbid: boolean): void;
  /** From now on, a watch request is answered with a 307 to `location` (undefined: opened again as usual). */
  redirectWatches(location: string | undefined): void;
  /**
   * Compacts the history: every version up to now is "too old". `as: 'event'`: open watches get an ERROR event with
   * a 410 Status and are ended, and a watch from an old version opens to the same event, as a real API server
   * answers; `as: 'status'`: open watches are just ended, and a watch from an old version is answered HTTP 410.
   */
  expire(as: 'event' | 'status'): void;
  /**
   * An etcd restored from an older backup: the store's version goes back to `version` (below what clients saw) with
   * the ConfigMap holding `data`, its history gone, every open watch reset (the servers restarted). A watch from a
   * version the store has not reached opens (200) and then says nothing, no BOOKMARK either, until `timeoutSeconds`,
   * as a real API server's watch cache does (test/control-plane/kube-api-stand-in-probe.e2e.test.ts › "a watch from a
   * version the server has not reached …").
   */
  restore(version: number, data: Readonly<Record<string, string>>): void;
  /** Ends every open watch: cleanly (`end`), or by resetting its connection mid-stream (`reset`). */
  dropWatches(how: 'end' | 'reset'): void;
  /** From now on, watches are opened (200) and then say nothing, never ending: a half-open connection. */
  hangWatches(hang: boolean): void;
  /** An outage: while down, open watches are reset and every request is answered 503 (the store stays as it is). */
  setDown(down: boolean): void;
  /** The token requests must carry from now on. */
  setToken(token: string): void;
  close(): Promise<void>;
}
