/** One plain HTTP/1.1 exchange with a real model server: a fresh connection each time, the whole body, a deadline. */
import { request } from 'node:http';

/** A server's answer, as it sent it. */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/**
 * `method` `url` with `body` (JSON-encoded unless a string; no body when undefined). A fresh connection per call
 * (no pool: Triton keeps a socket open after a real load even when asked to close it, and a test's server may be
 * gone by the next call); the body is read to its Content-Length. Rejects on a transport error or after
 * `timeoutMs`.
 */
export const httpCall = (
  method: string,
  url: string,
  body?: unknown,
  timeoutMs = 30_000,
): Promise<HttpAnswer> =>
  new Promise<HttpAnswer>((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = request(
      url,
      {
        method,
        agent: false,
        headers: {
          accept: 'application/json',
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          req.destroy();
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
