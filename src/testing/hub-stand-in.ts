/**
 * startHubStandIn: a Hugging Face Hub stand-in — the API and downloads huggingface_hub's `snapshot_download` uses,
 * with LFS files redirected to a second server on another port, the "CDN".
 *
 * Covered, as the Hub answers (huggingface_hub 2.4's hf_api.py, file_download.py, utils/_http.py):
 * - `GET /api/models/{owner}/{name}/revision/{revision}`: branches, tags and full commit shas resolve; the answer
 *   has `id`, `sha`, `private`, `gated` and `siblings` (`rfilename`; with `?blobs=true` also `size`, `blobId`,
 *   `lfs`); an unknown revision is 404 `X-Error-Code: RevisionNotFound`.
 * - `GET /api/models/{owner}/{name}/tree/{revision}[/{path}]`: `recursive=true` lists files and directories
 *   (`type`, `oid`, `size`, `lfs: {oid, size, pointerSize}`, `path`), paged `pageSize` entries at a time (the
 *   Hub: 1,000) with `Link: <…&cursor=…>; rel="next"`.
 * - `GET`/`HEAD /{owner}/{name}/resolve/{revision}/{path}`: a small file answered at once (`ETag` its git blob id,
 *   `X-Repo-Commit`, Range); an LFS file a 302 to the CDN with a signed URL, `X-Linked-Etag` (its sha256),
 *   `X-Linked-Size`, `X-Repo-Commit`; a missing file 404 `EntryNotFound`.
 * - The CDN: the bytes by sha256 for a signature it issued (else 403), with `ETag`, `Range` and `If-Range`.
 * - Access: an unknown token is 401 everywhere; a missing or private repo is 401 `RepoNotFound` without a token
 *   (as the Hub answers both) and 404 with one that cannot read it; a gated repo's metadata and tree are public,
 *   its files 401 `GatedRepo` without a token and 403 with one not granted. A renamed repo answers a relative 307.
 * - Every request recorded (which server, path, query, its Authorization and Range), and faults on demand: an
 *   error status, a body cut short, or a file's answer carrying other bytes, framed by length, chunks or a close.
 *
 * Not covered: xet storage (`X-Xet-*` headers, the CAS; the Hub also serves xet files over the CDN redirect used
 * here), datasets and spaces, `refs/pr/N` and short shas, `expand=true` tree entries (last commit, security
 * scans), the `/api/models/{id}` answer without a revision, uploads, rate-limit headers, request ids.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { revisionAnswer, sendBytes, treeListing, type BodyFraming } from './hub-answers';
import {
  commitOf,
  HubRepos,
  type HubFileSpec,
  type HubRefusal,
  type HubRepoOptions,
  type StoredHubFile,
} from './hub-repos';
import { startHttpServer } from './http-server';

export { type HubFileSpec, type HubRepoOptions } from './hub-repos';
export { type BodyFraming } from './hub-answers';

/** How to start the stand-in. */
export interface HubStandInOptions {
  /** Entries per tree page (the Hub: 1,000). */
  readonly pageSize?: number;
}

/** A request either server received. */
export interface HubRequest {
  readonly server: 'hub' | 'cdn';
  readonly method: string;
  /** The decoded path: `/org/m1/resolve/main/weights/model.bin`. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** The Authorization header, as sent (tests check where a token went). */
  readonly authorization?: string;
  readonly range?: string;
}

/** The routes a fault can be injected on. */
export type HubRoute = 'revision' | 'tree' | 'resolve' | 'cdn';

/**
 * What the stand-in does instead: answer `status` (a JSON error, no X-Error-Code), cut a body after some bytes, or
 * (on `resolve` and `cdn`) answer with `serve` in place of the file's bytes, framed as `framing` says: with a
 * Content-Length (the default; ranges answered from `serve`), chunked, or ended by closing the connection.
 */
export type HubFault =
  | { readonly status: number }
  | { readonly cutAfterBytes: number }
  | { readonly serve: Uint8Array; readonly framing?: BodyFraming };

/** The running stand-in. */
export interface HubStandIn {
  /** `http://127.0.0.1:<port>`: `HF_ENDPOINT`. */
  readonly url: string;
  /** The CDN LFS files redirect to (another port: another endpoint). */
  readonly cdnUrl: string;
  /** Every request to either server, in arrival order. */
  readonly requests: ReadonlyArray<HubRequest>;
  /** Creates an empty repo; for one that exists (a commit creates a public one), sets the options given. */
  createRepo(repoId: string, options?: HubRepoOptions): void;
  /** A new commit on `branch` (default `main`) holding exactly `files`; returns its sha. */
  commit(repoId: string, files: Readonly<Record<string, HubFileSpec>>, branch?: string): string;
  tag(repoId: string, tag: string, sha: string): void;
  /** Moves a repo: its old id answers a relative redirect to the new one. */
  rename(from: string, to: string): void;
  /** Makes `token` valid, granted read access to `repoIds` (private repos, gated repos' files). */
  addToken(token: string, repoIds?: ReadonlyArray<string>): void;
  /** LFS redirects point at `base` from now on (a relay or proxy in front of the CDN), with the same paths. */
  serveCdnVia(base: string): void;
  /** The next `times` requests on `route` (default 1; `Infinity` for all) meet `fault`; 0 clears it. */
  injectFault(route: HubRoute, fault: HubFault, times?: number): void;
  close(): Promise<void>;
}

const json = (
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) =>
  void response
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
    .end(JSON.stringify(body));

const refuse = (response: ServerResponse, refusal: HubRefusal): void =>
  json(
    response,
    refusal.status,
    { error: refusal.message },
    {
      ...(refusal.code !== undefined ? { 'x-error-code': refusal.code } : {}),
      'x-error-message': refusal.message,
    },
  );

const isRefusal = (value: object): value is HubRefusal => 'status' in value;

/** The bytes a file's answer carries: the file's, or what a fault serves in their place. */
const servedData = (fault: HubFault | undefined, data: Buffer): Buffer =>
  fault !== undefined && 'serve' in fault ? Buffer.from(fault.serve) : data;

const apiRoutes = new Map<string, HubRoute>([
  ['revision', 'revision'],
  ['tree', 'tree'],
]);
const fileRoutes = new Map<string, HubRoute>([['resolve', 'resolve']]);

const segments = (pathname: string): string[] => pathname.split('/').slice(1).map(decodeURIComponent);

/** Starts the Hub stand-in and its CDN on two free ports of 127.0.0.1. */
export const startHubStandIn = async (options: HubStandInOptions = {}): Promise<HubStandIn> => {
  const pageSize = options.pageSize ?? 1000;
  const repos = new HubRepos();
  const requests: HubRequest[] = [];
  const faults = new Map<HubRoute, { fault: HubFault; remaining: number }>();
  const blobs = new Map<string, Buffer>();
  const signatures = new Set<string>();
  let cdnBase: string | undefined;
  const takeFault = (route: HubRoute): HubFault | undefined => {
    const entry = faults.get(route);
    if (entry === undefined || entry.remaining <= 0) return undefined;
    entry.remaining -= 1;
    return entry.fault;
  };
  const record = (server: 'hub' | 'cdn', request: IncomingMessage, url: URL): void => {
    const { authorization, range } = request.headers;
    requests.push({
      server,
      method: request.method ?? 'GET',
      path: decodeURIComponent(url.pathname),
      query: Object.fromEntries(url.searchParams),
      ...(authorization !== undefined ? { authorization } : {}),
      ...(range !== undefined ? { range } : {}),
    });
  };

  const cdn = await startHttpServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://cdn');
    record('cdn', request, url);
    const sha256 = /^\/repos\/[0-9a-f]{2}\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(url.pathname)?.[1];
    const data = sha256 === undefined ? undefined : blobs.get(sha256);
    if (data === undefined || !signatures.has(url.searchParams.get('X-Amz-Signature') ?? '')) {
      response
        .writeHead(403, { 'content-type': 'application/xml' })
        .end('<Error><Code>AccessDenied</Code></Error>');
      return;
    }
    const fault = takeFault('cdn');
    if (fault !== undefined && 'status' in fault) return json(response, fault.status, { error: 'injected' });
    sendBytes(request, response, servedData(fault, data), `"${sha256}"`, {}, fault);
  });

  const resolved = (
    response: ServerResponse,
    request: IncomingMessage,
    sha: string,
    path: string,
    file: StoredHubFile,
  ) => {
    const fault = takeFault('resolve');
    if (fault !== undefined && 'status' in fault) return json(response, fault.status, { error: 'injected' });
    if (!file.lfs) {
      sendBytes(
        request,
        response,
        servedData(fault, file.data),
        `"${file.oid}"`,
        { 'x-repo-commit': sha },
        fault,
      );
      return;
    }
    blobs.set(file.sha256, file.data);
    const signature = randomBytes(16).toString('hex');
    signatures.add(signature);
    const where = `/repos/${file.sha256.slice(0, 2)}/${file.sha256.slice(2, 4)}/${file.sha256}`;
    const query = `?response-content-disposition=${encodeURIComponent(`inline; filename="${path.split('/').pop()}"`)}&Expires=9999999999&X-Amz-Signature=${signature}`;
    response
      .writeHead(302, {
        location: `${cdnBase ?? cdn.url}${where}${query}`,
        etag: `"${file.oid}"`,
        'x-linked-etag': `"${file.sha256}"`,
        'x-linked-size': String(file.data.length),
        'x-repo-commit': sha,
        'content-length': 0,
      })
      .end();
  };

  const hub = await startHttpServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://hub');
    record('hub', request, url);
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    const parts = segments(url.pathname);
    const api = parts[0] === 'api' && parts[1] === 'models';
    const [owner, name, route, revision, ...rest] = api ? parts.slice(2) : parts;
    const kind = (api ? apiRoutes : fileRoutes).get(route ?? '');
    if (kind === undefined || owner === undefined || name === undefined || revision === undefined) {
      return json(response, 404, { error: "Sorry, we can't find the page you are looking for." });
    }
    const repoId = `${owner}/${name}`;
    const moved = repos.movedTo(repoId);
    if (moved !== undefined) {
      const raw = url.pathname.split('/');
      const at = api ? 3 : 1;
      raw.splice(at, 2, ...moved.split('/'));
      response.writeHead(307, { location: `${raw.join('/')}${url.search}` }).end();
      return;
    }
    const repo = repos.access(repoId, token, kind === 'resolve' ? 'files' : 'meta');
    if (isRefusal(repo)) return refuse(response, repo);
    const sha = commitOf(repo, revision);
    if (sha === undefined) {
      return refuse(response, {
        status: 404,
        code: 'RevisionNotFound',
        message: `Invalid rev id: ${revision}`,
      });
    }
    if (kind !== 'resolve') {
      const fault = takeFault(kind);
      if (fault !== undefined && 'status' in fault)
        return json(response, fault.status, { error: 'injected' });
    }
    const files = repo.commits.get(sha)!;
    if (kind === 'resolve') {
      const path = rest.join('/');
      const file = files.get(path);
      if (file === undefined)
        return refuse(response, { status: 404, code: 'EntryNotFound', message: 'Entry not found' });
      return resolved(response, request, sha, path, file);
    }
    if (kind === 'revision') {
      return json(response, 200, revisionAnswer(repoId, repo, sha, url.searchParams.get('blobs') === 'true'));
    }
    const under = rest.join('/');
    const entries = treeListing(files, under, url.searchParams.get('recursive') === 'true');
    if (entries === undefined) {
      return refuse(response, {
        status: 404,
        code: 'EntryNotFound',
        message: `${under} does not exist on "${revision}"`,
      });
    }
    const from = Number(Buffer.from(url.searchParams.get('cursor') ?? '', 'base64url').toString() || 0);
    const page = entries.slice(from, from + pageSize);
    const next = new URL(url.href.replace(/^http:\/\/hub/, hub.url));
    next.searchParams.set('cursor', Buffer.from(String(from + pageSize)).toString('base64url'));
    json(response, 200, page, from + pageSize < entries.length ? { link: `<${next.href}>; rel="next"` } : {});
  });

  return {
    url: hub.url,
    cdnUrl: cdn.url,
    requests,
    createRepo: (repoId, repoOptions) => repos.create(repoId, repoOptions),
    commit: (repoId, files, branch) => repos.commit(repoId, files, branch),
    tag: (repoId, tag, sha) => repos.tag(repoId, tag, sha),
    rename: (from, to) => repos.rename(from, to),
    addToken: (token, repoIds) => repos.addToken(token, repoIds),
    serveCdnVia: (base) => {
      cdnBase = base.replace(/\/+$/, '');
    },
    injectFault: (route, fault, times = 1) => void faults.set(route, { fault, remaining: times }),
    close: async () => {
      await Promise.all([hub.close(), cdn.close()]);
    },
  };
};
