/** A node:http storage server for acceptance tests: in-memory bodies (files, tar.gz, zip) with faults per path. */
import { create as tarCreate } from 'tar';
import * as yazl from 'yazl';
import { startHttpServer } from '../../src/testing/http-server';
import { writeFiles } from './file-tree';
import { removeTempDir, tempDir } from './temp-dir';

/** One request the storage server answered, and how. */
export interface StorageRequest {
  readonly path: string;
  readonly status: number;
  /** True when the body was cut off mid-stream on purpose. */
  readonly cut: boolean;
}

/** A node:http storage server on 127.0.0.1 serving in-memory bodies, with fault switches per path. */
export interface StorageServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: ReadonlyArray<StorageRequest>;
  /** How many requests `path` received. */
  requestsFor(path: string): number;
  /** Serves `body` at `path` with `contentType` (default text/plain). */
  file(path: string, body: string | Buffer, contentType?: string): void;
  /** Serves a tar.gz (built with `tar`) of `files` at `path`; returns its bytes. */
  tarGz(path: string, files: Readonly<Record<string, string>>, contentType?: string): Promise<Buffer>;
  /** Serves a zip (built with `yazl`) of `files` at `path`; returns its bytes. */
  zip(path: string, files: Readonly<Record<string, string>>, contentType?: string): Promise<Buffer>;
  /** The next `times` requests of `path` (default: all) answer `status` with a short text body. */
  fail(path: string, status: number, times?: number): void;
  /** The next `times` requests of `path` send the headers and half the body, then drop the connection. */
  cut(path: string, times: number): void;
  close(): Promise<void>;
}

interface Route {
  body: Buffer;
  contentType: string;
}

const collect = async (stream: AsyncIterable<unknown>): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
};

/** A tar.gz of `files` made by the `tar` package from a scratch dir. */
export const makeTarGz = async (files: Readonly<Record<string, string>>): Promise<Buffer> => {
  const scratch = await tempDir('tar');
  try {
    await writeFiles(scratch, files);
    return await collect(tarCreate({ gzip: true, cwd: scratch, portable: true }, Object.keys(files)));
  } finally {
    await removeTempDir(scratch);
  }
};

/** A zip of `files` made by `yazl`. */
export const makeZip = async (files: Readonly<Record<string, string>>): Promise<Buffer> => {
  const zip = new yazl.ZipFile();
  for (const [path, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), path);
  zip.end();
  return collect(zip.outputStream);
};

/** Starts an empty storage server on 127.0.0.1; add bodies with `file`, `tarGz` and `zip`. */
export const startStorageServer = async (): Promise<StorageServer> => {
  const routes = new Map<string, Route>();
  const failures = new Map<string, { status: number; remaining: number }>();
  const cuts = new Map<string, number>();
  const requests: StorageRequest[] = [];

  const server = await startHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://storage').pathname;
    const failure = failures.get(path);
    if (failure !== undefined && failure.remaining > 0) {
      failure.remaining -= 1;
      requests.push({ path, status: failure.status, cut: false });
      res.writeHead(failure.status, { 'content-type': 'text/plain' }).end(`injected ${failure.status}`);
      return;
    }
    const route = routes.get(path);
    if (route === undefined) {
      requests.push({ path, status: 404, cut: false });
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const headers = { 'content-type': route.contentType, 'content-length': route.body.length };
    const cutsLeft = cuts.get(path) ?? 0;
    if (cutsLeft > 0) {
      cuts.set(path, cutsLeft - 1);
      requests.push({ path, status: 200, cut: true });
      res.writeHead(200, headers);
      res.write(route.body.subarray(0, Math.floor(route.body.length / 2)), () => res.socket?.destroy());
      return;
    }
    requests.push({ path, status: 200, cut: false });
    res.writeHead(200, headers).end(route.body);
  });

  const serve = (path: string, body: Buffer, contentType: string): Buffer => {
    routes.set(path, { body, contentType });
    return body;
  };

  return {
    url: server.url,
    requests,
    requestsFor: (path) => requests.filter((r) => r.path === path).length,
    file: (path, body, contentType = 'text/plain') => void serve(path, Buffer.from(body), contentType),
    tarGz: async (path, files, contentType = 'application/gzip') =>
      serve(path, await makeTarGz(files), contentType),
    zip: async (path, files, contentType = 'application/zip') =>
      serve(path, await makeZip(files), contentType),
    fail: (path, status, times = Number.POSITIVE_INFINITY) =>
      void failures.set(path, { status, remaining: times }),
    cut: (path, times) => void cuts.set(path, times),
    close: server.close,
  };
};
