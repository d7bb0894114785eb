/** One raw HTTP/1.1 exchange, bytes in and out, for comparing what a server answers directly and through a proxy. */
import { request } from 'node:http';

/** An answer as it came: status, raw header pairs, the body's bytes. */
export interface Exchanged {
  readonly status: number;
  readonly statusMessage: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly rawHeaders: ReadonlyArray<string>;
  readonly body: Buffer;
}

/** `method` `base + path` with `headers` and `body` on a fresh connection; rejects on a transport error or after 30 s. */
export const exchange = (
  base: string,
  method: string,
  path: string,
  headers: Readonly<Record<string, string>> = {},
  body?: Buffer | string,
): Promise<Exchanged> =>
  new Promise<Exchanged>((resolve, reject) => {
    const url = new URL(base);
    const call = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        agent: false,
        headers: {
          ...headers,
          ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
        },
        timeout: 30_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.once('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            statusMessage: response.statusMessage ?? '',
            headers: response.headers,
            rawHeaders: response.rawHeaders,
            body: Buffer.concat(chunks),
          }),
        );
        response.once('error', reject);
      },
    );
    call.once('timeout', () => call.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    call.once('error', reject);
    call.end(body);
  });

/** The header pairs that say what the answer is, without the ones a hop may set (date, connection, keep-alive). */
export const endToEndHeaders = (answer: Exchanged): Array<[string, string]> => {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < answer.rawHeaders.length; i += 2) {
    const name = answer.rawHeaders[i]!;
    if (!['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(name.toLowerCase()))
      pairs.push([name, answer.rawHeaders[i + 1]!]);
  }
  return pairs;
};
