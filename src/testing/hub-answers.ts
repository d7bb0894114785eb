/** The Hub stand-in's answers: a revision's model info and a commit's tree entries as the Hub shapes them, and file bytes with ranges. */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseRange } from './gcs-objects';
import type { StoredHubFile, StoredRepo } from './hub-repos';

const lfsInfo = (file: StoredHubFile, shaField: 'oid' | 'sha256') => ({
  [shaField]: file.sha256,
  size: file.data.length,
  pointerSize: 134,
});

/**
 * The answer of `/api/models/{repo}/revision/{revision}` at commit `sha`: the model info huggingface_hub's
 * `ModelInfo` reads, `siblings` with only `rfilename` unless `blobs` (`?blobs=true`) adds sizes and LFS info.
 */
export const revisionAnswer = (repoId: string, repo: StoredRepo, sha: string, blobs: boolean): unknown => {
  const files = repo.commits.get(sha)!;
  const siblings = [...files].map(([rfilename, file]) => ({
    rfilename,
    ...(blobs
      ? { size: file.data.length, blobId: file.oid, ...(file.lfs ? { lfs: lfsInfo(file, 'sha256') } : {}) }
      : {}),
  }));
  return {
    _id: sha.slice(0, 24),
    id: repoId,
    modelId: repoId,
    author: repoId.split('/')[0],
    sha,
    private: repo.options.private === true,
    gated: repo.options.gated ?? false,
    disabled: false,
    tags: [],
    siblings,
  };
};

/** Every entry of the tree of `files`, recursively: files (with `lfs` for LFS ones) and the directories above them. */
const treeEntries = (files: ReadonlyMap<string, StoredHubFile>): Array<Record<string, unknown>> => {
  const dirs = new Set<string>();
  for (const path of files.keys()) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  const treeOid = (path: string): string => createHash('sha1').update(`tree ${path}`).digest('hex');
  return [
    ...[...dirs].map((path) => ({ type: 'directory', oid: treeOid(path), size: 0, path })),
    ...[...files].map(([path, file]) => ({
      type: 'file',
      oid: file.oid,
      size: file.data.length,
      ...(file.lfs ? { lfs: lfsInfo(file, 'oid') } : {}),
      path,
    })),
  ].sort((a, b) => (a.path < b.path ? -1 : 1));
};

/**
 * The entries of `/tree/{revision}/{under}`: those under `under` (all for `''`), only its direct children unless
 * `recursive`; undefined when `under` names nothing (the Hub's 404).
 */
export const treeListing = (
  files: ReadonlyMap<string, StoredHubFile>,
  under: string,
  recursive: boolean,
): ReadonlyArray<Record<string, unknown>> | undefined => {
  const entries = treeEntries(files).filter(({ path }) => {
    const name = String(path);
    const inside =
      under === '' ? name : name.startsWith(`${under}/`) ? name.slice(under.length + 1) : undefined;
    return inside !== undefined && (recursive || !inside.includes('/'));
  });
  return under !== '' && entries.length === 0 ? undefined : entries;
};

/** How a body's end is told: by its Content-Length, by chunked encoding's last chunk, or by closing the connection. */
export type BodyFraming = 'content-length' | 'chunked' | 'close';

/**
 * Sends `data` (or its range) with `headers`, framed as `how.framing` says (default with a Content-Length), cut after
 * `how.cutAfterBytes` bytes when a fault says so.
 */
export const sendBytes = (
  request: IncomingMessage,
  response: ServerResponse,
  data: Buffer,
  etag: string,
  headers: Record<string, string | number>,
  how: { readonly cutAfterBytes?: number; readonly framing?: BodyFraming } = {},
): void => {
  const ifRange = request.headers['if-range'];
  const ranged =
    request.headers.range !== undefined && data.length > 0 && (ifRange === undefined || ifRange === etag);
  const span = ranged ? parseRange(request.headers.range!, data.length) : ([0, data.length - 1] as const);
  if (span === undefined) {
    response.writeHead(416, { 'content-range': `bytes */${data.length}` }).end();
    return;
  }
  const body = data.subarray(span[0], span[1] + 1);
  const framing = how.framing ?? 'content-length';
  const head: Record<string, string | number> = {
    'content-type': 'application/octet-stream',
    ...(framing === 'content-length' ? { 'content-length': body.length } : {}),
    'accept-ranges': 'bytes',
    etag,
    ...(ranged ? { 'content-range': `bytes ${span[0]}-${span[1]}/${data.length}` } : {}),
    ...headers,
  };
  if (framing === 'close') return sendClosing(response, ranged ? 206 : 200, head, body, request.method);
  response.writeHead(ranged ? 206 : 200, head);
  if (request.method === 'HEAD') response.end();
  else if (how.cutAfterBytes !== undefined)
    response.write(body.subarray(0, how.cutAfterBytes), () => response.destroy());
  else response.end(body);
};

/** Writes the answer on the socket by hand, with no length and no chunks: the body ends when the connection does. */
const sendClosing = (
  response: ServerResponse,
  status: number,
  head: Record<string, string | number>,
  body: Buffer,
  method: string | undefined,
): void => {
  const lines = Object.entries({ ...head, connection: 'close' }).map(([name, value]) => `${name}: ${value}`);
  const socket = response.socket!;
  socket.write(
    `HTTP/1.1 ${status} ${status === 206 ? 'Partial Content' : 'OK'}\r\n${lines.join('\r\n')}\r\n\r\n`,
  );
  socket.end(method === 'HEAD' ? '' : body);
};
