/**
 * DirectClient against real sockets on 127.0.0.1: node:http and node:https servers, and raw TCP servers that send
 * exact bytes (hostile ones included). Bodies read into sinks of two buffers, as the parts reader's are, and as
 * streams.
 */
import { randomBytes } from 'node:crypto';
import { getEventListeners } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import {
  DirectClient,
  requestHead,
  type DirectRequest,
  type DirectTls,
} from '../../../src/net/direct/direct-client';
import type { DirectBody } from '../../../src/net/direct/direct-body';
import { BodyTooLarge } from '../../../src/net/direct/direct-body';
import type { ByteSink } from '../../../src/net/direct/byte-sink';
import { DirectTimeout } from '../../../src/net/direct/direct-errors';
import { MalformedResponse } from '../../../src/net/direct/response-head';
import { writeRepeated, type HttpHandler, type HttpServerOptions } from '../../../src/testing/http-server';
import { sleep, waitFor, withTimeout } from '../../../src/testing/wait';
import { closedPort, useHttpServers } from '../../helpers/http-servers';
import { serverTls, tlsFixture } from '../../helpers/tls';

const KiB = 1024;
const body = randomBytes(1024 * KiB + 4321);

// ---------------------------------------------------------------------------------------------------------------
// Clients, bodies and servers made by a test are closed after it.

const clients: DirectClient[] = [];
const bodies: DirectBody[] = [];
const rawServers: RawServer[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const open of bodies.splice(0)) open.destroy();
  await Promise.all(rawServers.splice(0).map((server) => server.close()));
});

const newClient = (
  tls: DirectTls = { rejectUnauthorized: true },
  keepAlive?: { perOrigin: number; idleMs: number },
) => {
  const client = new DirectClient(tls, keepAlive);
  clients.push(client);
  return client;
};

/** A GET of `url` with generous timeouts unless `options` say otherwise; its body is destroyed after the test. */
const get = async (client: DirectClient, url: URL, options: Partial<DirectRequest> = {}) => {
  const response = await client.get({
    url,
    headers: {},
    signal: new AbortController().signal,
    headersTimeoutMs: 5_000,
    idleTimeoutMs: 5_000,
    ...options,
  });
  bodies.push(response.body);
  return response;
};

const readAll = async (stream: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
};

/** Resolves once `socket` has closed (at once if it has), or rejects after `ms`. */
const closes = (socket: Socket, ms = 10_000): Promise<void> =>
  socket.destroyed && socket.closed
    ? Promise.resolve()
    : withTimeout(
        // Not events.once: it rejects on the 'error' (ECONNRESET) a server side may see first.
        new Promise<void>((resolve) => socket.once('close', () => resolve())),
        ms,
        'the server side of a connection to close',
      );

// ---------------------------------------------------------------------------------------------------------------
// node:http servers that count their connections.

const serve = useHttpServers();

interface CountingServer {
  url(path?: string): URL;
  /** The server side of each connection, in the order they came. */
  readonly sockets: Socket[];
  readonly requests: IncomingMessage[];
}

const httpServer = async (handler: HttpHandler, options?: HttpServerOptions): Promise<CountingServer> => {
  const sockets: Socket[] = [];
  const requests: IncomingMessage[] = [];
  const server = await serve((request, response) => {
    if (!sockets.includes(request.socket)) sockets.push(request.socket);
    requests.push(request);
    return handler(request, response);
  }, options);
  return { url: (path = '/model.bin') => new URL(path, server.url), sockets, requests };
};

/** Answers 206 with all of `bytes`. */
const ranged =
  (bytes: Buffer): HttpHandler =>
  (_request, response) => {
    response.writeHead(206, {
      'content-length': bytes.byteLength,
      'content-range': `bytes 0-${bytes.byteLength - 1}/${bytes.byteLength}`,
    });
    response.end(bytes);
  };

/** Answers 206 announcing all of `bytes` and sends the first `sent` of them, then stalls. */
const stalls =
  (bytes: Buffer, sent: number): HttpHandler =>
  (_request, response) => {
    response.writeHead(206, { 'content-length': bytes.byteLength });
    response.write(bytes.subarray(0, sent));
  };

// ---------------------------------------------------------------------------------------------------------------
// Raw TCP servers: each complete request head is handed to `answer`, which writes whatever bytes it likes.

interface Exchange {
  readonly socket: Socket;
  /** Which connection (0 for the first the server accepted). */
  readonly connection: number;
  /** Which request on that connection (0 for its first). */
  readonly nth: number;
  readonly head: string;
}

interface RawServer {
  url(path?: string): URL;
  readonly sockets: Socket[];
  readonly heads: string[];
  close(): Promise<void>;
}

const rawServer = async (
  answer: (exchange: Exchange) => void,
  options: { unref?: boolean; tls?: boolean } = {},
) => {
  const sockets: Socket[] = [];
  const heads: string[] = [];
  const accept = (socket: Socket): void => {
    const connection = sockets.push(socket) - 1;
    if (options.unref === true) socket.unref();
    socket.on('error', () => undefined);
    let pending = '';
    let nth = 0;
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end + 4);
        pending = pending.slice(end + 4);
        heads.push(head);
        answer({ socket, connection, nth: nth++, head });
      }
    });
  };
  const server: Server = options.tls === true ? createTlsServer(serverTls(), accept) : createServer(accept);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  if (options.unref === true) server.unref();
  const { port } = server.address() as { port: number };
  const raw: RawServer = {
    url: (path = '/model.bin') =>
      new URL(`${options.tls === true ? 'https' : 'http'}://127.0.0.1:${port}${path}`),
    sockets,
    heads,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  rawServers.push(raw);
  return raw;
};

const crlf = (text: string): Buffer => Buffer.from(text.split('\n').join('\r\n'), 'latin1');

/** A head of `lines` (`\n`-separated; CRLF is written) and its empty line. */
const rawHead = (lines: string): Buffer => crlf(`${lines}\n\n`);

/** A head of `lines` and the bytes after it, `body` (`\n` written as CRLF too: a chunked body's lines). */
const rawAnswer = (lines: string, body: string): Buffer => Buffer.concat([rawHead(lines), crlf(body)]);

const lengthAnswer = (bytes: Buffer | string, status = '200 OK'): Buffer =>
  Buffer.concat([
    rawHead(`HTTP/1.1 ${status}\nContent-Length: ${Buffer.byteLength(bytes)}`),
    Buffer.from(bytes),
  ]);

// ---------------------------------------------------------------------------------------------------------------
// A sink as the parts reader's: two buffers, one filled while the other is written; a read waits when both are full.

interface SinkOptions {
  /** Each buffer's size. */
  readonly size?: number;
  /** Most bytes the sink takes in all (a part whose end shrank): then it offers no more space. */
  readonly limit?: number;
  /** How long writing a full buffer takes. */
  readonly writeMs?: number;
  /** Every how many landings `landed` also makes the reader wait `waitMs`. */
  readonly waitEvery?: number;
  readonly waitMs?: number;
  /** Told of every landing, with the bytes landed so far. */
  readonly onLanded?: (total: number) => void;
}

class TwoBufferSink implements ByteSink {
  private readonly size: number;
  private readonly buffers: [Buffer, Buffer];
  private current = 0;
  private filled = 0;
  private offered = 0;
  private readonly writing: Array<Promise<void> | undefined> = [undefined, undefined];
  private readonly written: Buffer[] = [];
  received = 0;
  landings = 0;
  waits = 0;
  /** What the reader did that a sink forbids: space asked for while told to wait, more landed than offered. */
  readonly faults: string[] = [];
  private waiting = false;

  constructor(private readonly options: SinkOptions = {}) {
    this.size = options.size ?? 64 * KiB;
    this.buffers = [Buffer.alloc(this.size), Buffer.alloc(this.size)];
  }

  space(max: number): Uint8Array {
    if (this.waiting) this.faults.push('space asked for while the sink made the reader wait');
    if (this.writing[this.current] !== undefined)
      this.faults.push('space asked for in a buffer being written');
    const room = Math.max(
      0,
      Math.min(max, this.size - this.filled, (this.options.limit ?? Infinity) - this.received),
    );
    this.offered = room;
    return this.buffers[this.current]!.subarray(this.filled, this.filled + room);
  }

  landed(bytes: number): Promise<void> | undefined {
    if (this.waiting) this.faults.push('bytes landed while the sink made the reader wait');
    if (bytes > this.offered) this.faults.push(`${bytes} bytes landed in ${this.offered} offered`);
    this.offered = 0;
    this.received += bytes;
    this.filled += bytes;
    this.landings += 1;
    this.options.onLanded?.(this.received);
    const waits: Promise<void>[] = [];
    if (this.filled === this.size) {
      const busy = this.flip();
      if (busy !== undefined) waits.push(busy);
    }
    const { waitEvery, waitMs = 5 } = this.options;
    if (waitEvery !== undefined && this.landings % waitEvery === 0) waits.push(sleep(waitMs));
    if (waits.length === 0) return undefined;
    this.waits += 1;
    this.waiting = true;
    return Promise.all(waits).then(() => {
      this.waiting = false;
    });
  }

  /** Everything landed, in order, once every write is done. */
  async data(): Promise<Buffer> {
    while (this.writing.some((write) => write !== undefined)) await sleep(1);
    return Buffer.concat([...this.written, this.buffers[this.current]!.subarray(0, this.filled)]);
  }

  /** Starts writing the full buffer and moves to the other; that one's write, if still running. */
  private flip(): Promise<void> | undefined {
    const full = this.current;
    const index = this.written.push(Buffer.alloc(0)) - 1;
    // The buffer is copied when its write ends, as a file write reads it: a byte landed in it meanwhile would show.
    this.writing[full] = sleep(this.options.writeMs ?? 1).then(() => {
      this.written[index] = Buffer.from(this.buffers[full]!);
      this.writing[full] = undefined;
    });
    this.current = 1 - full;
    this.filled = 0;
    return this.writing[this.current];
  }
}

// ---------------------------------------------------------------------------------------------------------------

describe('DirectClient', () => {
  describe('bodies read into a sink', () => {
    it('lands a 206 body byte-exact in a sink of two 64 KiB buffers that makes it wait', async () => {
      const server = await httpServer(ranged(body));
      const response = await get(newClient(), server.url());
      expect(response.status).toBe(206);
      expect(response.body.direct).toBe(true);
      const sink = new TwoBufferSink({ writeMs: 2, waitEvery: 3 });
      await expect(response.body.readInto(sink)).resolves.toBe(true);
      expect(sink.faults).toEqual([]);
      expect(sink.waits).toBeGreaterThan(0);
      expect((await sink.data()).equals(body)).toBe(true);
    });

    it('reuses the connection for the next request when a body was read whole into a sink', async () => {
      const server = await httpServer(ranged(body));
      const client = newClient();
      await (await get(client, server.url())).body.readInto(new TwoBufferSink());
      const sink = new TwoBufferSink({ writeMs: 2 });
      await expect((await get(client, server.url())).body.readInto(sink)).resolves.toBe(true);
      expect((await sink.data()).equals(body)).toBe(true);
      expect(server.requests).toHaveLength(2);
      expect(server.sockets).toHaveLength(1);
    });

    it('lands the body whole when the sink keeps the reader waiting longer than the idle timeout', async () => {
      const server = await httpServer(ranged(body));
      const response = await get(newClient(), server.url(), { idleTimeoutMs: 200 });
      const sink = new TwoBufferSink({ waitEvery: 2, waitMs: 400 });
      await expect(response.body.readInto(sink)).resolves.toBe(true);
      expect((await sink.data()).equals(body)).toBe(true);
    });

    it('lands a body that came with its head when the body is small', async () => {
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer('tiny body')));
      const sink = new TwoBufferSink();
      await expect((await get(newClient(), server.url())).body.readInto(sink)).resolves.toBe(true);
      expect((await sink.data()).toString()).toBe('tiny body');
    });

    it('lands a body that trickles in pieces when the server writes it slowly', async () => {
      const pieces = [
        body.subarray(0, 10),
        body.subarray(10, 70_000),
        body.subarray(70_000, 70_001),
        body.subarray(70_001, 200_000),
      ];
      const server = await rawServer(({ socket }) => {
        socket.write(rawHead(`HTTP/1.1 206 Partial Content\nContent-Length: 200000`));
        void (async () => {
          for (const piece of pieces) {
            await sleep(20);
            socket.write(piece);
          }
        })();
      });
      const sink = new TwoBufferSink({ writeMs: 5 });
      await expect((await get(newClient(), server.url())).body.readInto(sink)).resolves.toBe(true);
      expect(sink.faults).toEqual([]);
      expect((await sink.data()).equals(body.subarray(0, 200_000))).toBe(true);
    });

    it('resolves true for an empty body when the Content-Length is 0', async () => {
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer('')));
      const client = newClient();
      await expect((await get(client, server.url())).body.readInto(new TwoBufferSink())).resolves.toBe(true);
      await expect((await get(client, server.url())).body.readInto(new TwoBufferSink())).resolves.toBe(true);
      expect(server.sockets).toHaveLength(1);
    });

    it('resolves false and closes the connection when the sink has no space left before the body ends', async () => {
      const server = await httpServer(ranged(body));
      const client = newClient();
      const sink = new TwoBufferSink({ limit: 100 * KiB + 7 });
      await expect((await get(client, server.url())).body.readInto(sink)).resolves.toBe(false);
      expect((await sink.data()).equals(body.subarray(0, 100 * KiB + 7))).toBe(true);
      await closes(server.sockets[0]!);
      await (await get(client, server.url())).body.readInto(new TwoBufferSink());
      expect(server.sockets).toHaveLength(2);
    });

    it('resolves true when the sink has space for exactly the body', async () => {
      const server = await httpServer(ranged(body));
      const sink = new TwoBufferSink({ limit: body.byteLength });
      await expect((await get(newClient(), server.url())).body.readInto(sink)).resolves.toBe(true);
      expect((await sink.data()).equals(body)).toBe(true);
    });

    it('rejects readInto when the body is chunked', async () => {
      const server = await httpServer((_request, response) => {
        response.write('a');
        response.end('b');
      });
      const response = await get(newClient(), server.url());
      expect(response.headers['transfer-encoding']).toBe('chunked');
      expect(response.body.direct).toBe(false);
      await expect(response.body.readInto(new TwoBufferSink())).rejects.toThrow(/length-framed/);
    });

    it('is no longer direct when reading the body as a stream has begun', async () => {
      const server = await httpServer(ranged(body));
      const response = await get(newClient(), server.url());
      const iterator = response.body[Symbol.asyncIterator]();
      await iterator.next();
      expect(response.body.direct).toBe(false);
      await iterator.return?.();
    });

    it('fails readInto with the sink’s own error when a wait it asked for rejects', async () => {
      const server = await httpServer(ranged(body));
      const response = await get(newClient(), server.url());
      const failure = new Error('disk full');
      const sink: ByteSink = {
        space: (max) => Buffer.alloc(Math.min(max, 4096)),
        landed: () => Promise.reject(failure),
      };
      await expect(response.body.readInto(sink)).rejects.toBe(failure);
      await closes(server.sockets[0]!);
    });
  });

  describe('bodies read as streams', () => {
    it('streams a length-framed body byte-exact and reuses the connection after', async () => {
      const answer = lengthAnswer(body.subarray(0, 300_000));
      const server = await rawServer(({ socket }) => {
        socket.write(answer.subarray(0, 100));
        setTimeout(() => socket.write(answer.subarray(100, 150_000)), 10);
        setTimeout(() => socket.write(answer.subarray(150_000)), 20);
      });
      const client = newClient();
      expect((await readAll((await get(client, server.url())).body)).equals(body.subarray(0, 300_000))).toBe(
        true,
      );
      expect((await readAll((await get(client, server.url())).body)).equals(body.subarray(0, 300_000))).toBe(
        true,
      );
      expect(server.sockets).toHaveLength(1);
    });

    it('streams a chunked body byte-exact, extensions and trailers skipped, and reuses the connection', async () => {
      const data = body.subarray(0, 100_000);
      const encoded = Buffer.concat([
        crlf('7;name=value\n'),
        data.subarray(0, 7),
        crlf('\n'),
        crlf(`${(60_000 - 7).toString(16)}\n`),
        data.subarray(7, 60_000),
        crlf('\n'),
        crlf(`${(100_000 - 60_000).toString(16).toUpperCase()}\n`),
        data.subarray(60_000),
        crlf('\n0\nX-Checksum: abc\n\n'),
      ]);
      const server = await rawServer(({ socket }) => {
        socket.write(rawHead('HTTP/1.1 200 OK\nTransfer-Encoding: chunked'));
        // Cut at odd places: inside a size line, between CR and LF, inside the trailers.
        const cuts = [1, 9, 10, 30_001, 60_020, 60_021, encoded.byteLength - 5, encoded.byteLength];
        cuts.forEach((end, i) =>
          setTimeout(() => socket.write(encoded.subarray(cuts[i - 1] ?? 0, end)), 5 * i),
        );
      });
      const client = newClient();
      expect((await readAll((await get(client, server.url())).body)).equals(data)).toBe(true);
      expect((await readAll((await get(client, server.url())).body)).equals(data)).toBe(true);
      expect(server.sockets).toHaveLength(1);
    });

    it('streams a node:http chunked body byte-exact when the server writes it in pieces', async () => {
      const server = await httpServer((_request, response) => {
        response.writeHead(200);
        response.write(body.subarray(0, 1000));
        setTimeout(() => response.end(body.subarray(1000)), 10);
      });
      const client = newClient();
      expect((await readAll((await get(client, server.url())).body)).equals(body)).toBe(true);
      expect((await readAll((await get(client, server.url())).body)).equals(body)).toBe(true);
      expect(server.sockets).toHaveLength(1);
    });

    it('streams a body that ends with the connection when it has no length', async () => {
      const server = await rawServer(({ socket }) => {
        socket.write(rawHead('HTTP/1.1 200 OK'));
        socket.write(body.subarray(0, 50_000));
        setTimeout(() => socket.end(body.subarray(50_000, 200_000)), 20);
      });
      const client = newClient();
      const response = await get(client, server.url());
      expect(response.body.direct).toBe(false);
      expect((await readAll(response.body)).equals(body.subarray(0, 200_000))).toBe(true);
      await readAll((await get(client, server.url())).body);
      expect(server.sockets).toHaveLength(2);
    });

    it('streams a body slowly read by its consumer byte-exact when the consumer pauses between chunks', async () => {
      const server = await httpServer(ranged(body));
      const chunks: Buffer[] = [];
      for await (const chunk of (await get(newClient(), server.url())).body) {
        chunks.push(Buffer.from(chunk as Uint8Array));
        if (chunks.length % 4 === 0) await sleep(2);
      }
      expect(Buffer.concat(chunks).equals(body)).toBe(true);
    });

    it('ends at once with no chunk when the answer is a 204', async () => {
      const server = await rawServer(({ socket }) => socket.write(rawHead('HTTP/1.1 204 No Content')));
      const client = newClient();
      const response = await get(client, server.url());
      expect(response.status).toBe(204);
      expect((await readAll(response.body)).byteLength).toBe(0);
      expect((await get(client, server.url())).status).toBe(204);
      expect(server.sockets).toHaveLength(1);
    });

    it('fails with BodyTooLarge and closes the connection when a streamed body passes maxStreamBytes', async () => {
      const server = await httpServer((_request, response) => {
        response.writeHead(500, { 'content-type': 'text/html' });
        writeRepeated(response, Buffer.alloc(64 * KiB, 0x3c), 64 * 64 * KiB);
      });
      const response = await get(newClient(), server.url(), { maxStreamBytes: 64 * KiB });
      expect(response.status).toBe(500);
      const failure = await readAll(response.body).catch((cause: unknown) => cause);
      expect(failure).toBeInstanceOf(BodyTooLarge);
      expect(failure).toMatchObject({ code: 'MODELSYNC_BODY_TOO_LARGE' });
      await closes(server.sockets[0]!);
    });

    it('reads a streamed body of exactly maxStreamBytes when it is no longer', async () => {
      const server = await httpServer(ranged(body.subarray(0, 64 * KiB)));
      const response = await get(newClient(), server.url(), { maxStreamBytes: 64 * KiB });
      expect((await readAll(response.body)).equals(body.subarray(0, 64 * KiB))).toBe(true);
    });

    it('closes the connection when a body is dropped before its end', async () => {
      const server = await httpServer(ranged(body));
      const client = newClient();
      const response = await get(client, server.url());
      await response.body.dump();
      await closes(server.sockets[0]!);
      await readAll((await get(client, server.url())).body);
      expect(server.sockets).toHaveLength(2);
    });
  });

  describe('interim answers', () => {
    it('skips 100 Continue and 103 Early Hints when they come before the answer in one write', async () => {
      const server = await rawServer(({ socket }) =>
        socket.write(
          Buffer.concat([
            rawHead('HTTP/1.1 100 Continue'),
            rawHead('HTTP/1.1 103 Early Hints\nLink: </a>; rel=preload'),
            lengthAnswer('hello'),
          ]),
        ),
      );
      const response = await get(newClient(), server.url());
      expect(response.status).toBe(200);
      expect(response.headers['link']).toBeUndefined();
      expect((await readAll(response.body)).toString()).toBe('hello');
    });

    it('skips interim answers when they come apart, split mid-head', async () => {
      const bytes = Buffer.concat([
        rawHead('HTTP/1.1 100 Continue'),
        rawHead('HTTP/1.1 103 Early Hints\nLink: </a>; rel=preload'),
        lengthAnswer('hello', '206 Partial Content'),
      ]);
      const server = await rawServer(({ socket }) => {
        [0, 10, 25, 40, 70, 90, bytes.byteLength].forEach((end, i, ends) =>
          setTimeout(() => socket.write(bytes.subarray(ends[i - 1] ?? 0, end)), 10 * i),
        );
      });
      const client = newClient();
      const response = await get(client, server.url());
      expect(response.status).toBe(206);
      const sink = new TwoBufferSink();
      await expect(response.body.readInto(sink)).resolves.toBe(true);
      expect((await sink.data()).toString()).toBe('hello');
    });

    it('skips an Early Hints sent by node:http when the server sends one', async () => {
      const server = await httpServer((_request, response) => {
        response.writeEarlyHints({ link: '</a>; rel=preload' });
        ranged(body)(_request, response);
      });
      const response = await get(newClient(), server.url());
      expect(response.status).toBe(206);
      const sink = new TwoBufferSink();
      await response.body.readInto(sink);
      expect((await sink.data()).equals(body)).toBe(true);
    });
  });

  describe('hostile servers', () => {
    it('fails with a headers timeout and closes the connection when a head never ends', async () => {
      const server = await rawServer(({ socket }) => socket.write(crlf('HTTP/1.1 200 OK\nX-A: b\n')));
      const started = performance.now();
      const failure = await get(newClient(), server.url(), { headersTimeoutMs: 300 }).catch(
        (cause: unknown) => cause,
      );
      expect(failure).toBeInstanceOf(DirectTimeout);
      expect(failure).toMatchObject({ name: 'TimeoutError', code: 'MODELSYNC_HEADERS_TIMEOUT' });
      // Not before its time; the code names the timer that ended it (nothing else ends a head that never ends).
      expect(performance.now() - started).toBeGreaterThanOrEqual(250);
      await closes(server.sockets[0]!);
    });

    it('fails with a headers timeout when a head is trickled a field at a time', async () => {
      const server = await rawServer(({ socket }) => {
        socket.write(crlf('HTTP/1.1 200 OK\n'));
        const trickle = setInterval(
          () => (socket.destroyed ? clearInterval(trickle) : socket.write(crlf('X-A: b\n'))),
          20,
        );
        socket.on('close', () => clearInterval(trickle));
      });
      // A deadline on the whole head, not on a pause: an idle timer would never fire while fields keep coming.
      await expect(get(newClient(), server.url(), { headersTimeoutMs: 300 })).rejects.toMatchObject({
        code: 'MODELSYNC_HEADERS_TIMEOUT',
      });
      await closes(server.sockets[0]!);
    });

    it('fails with MalformedResponse when a head passes 64 KiB in many fields', async () => {
      const server = await rawServer(({ socket }) => {
        socket.write(crlf('HTTP/1.1 200 OK\n'));
        for (let i = 0; i < 70; i++) socket.write(crlf(`X-${i}: ${'a'.repeat(1000)}\n`));
      });
      await expect(get(newClient(), server.url())).rejects.toBeInstanceOf(MalformedResponse);
      await closes(server.sockets[0]!);
    });

    it('fails with MalformedResponse when one field passes 64 KiB and the head is never ended', async () => {
      const server = await rawServer(({ socket }) =>
        socket.write(crlf(`HTTP/1.1 200 OK\nX-A: ${'a'.repeat(70 * KiB)}`)),
      );
      await expect(get(newClient(), server.url())).rejects.toBeInstanceOf(MalformedResponse);
      await closes(server.sockets[0]!);
    });

    it.each([
      ['a bare LF', 'HTTP/1.1 200 OK\r\nContent-Length: 5\nX-A: b\r\n\r\nhello'],
      ['an obs-fold', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n c\r\n\r\nhello'],
      ['a space before a colon', 'HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello'],
      ['a NUL in a value', 'HTTP/1.1 200 OK\r\nX-A: \x00\r\nContent-Length: 5\r\n\r\nhello'],
      ['two Content-Lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello'],
      ['a negative Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello'],
      ['an HTTP/0.9 answer (a body with no head)', '<html>hello</html>\r\n\r\n'],
      [
        'a 101 Switching Protocols',
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n',
      ],
    ])('fails with MalformedResponse and closes the connection when a head has %s', async (_what, bytes) => {
      const server = await rawServer(({ socket }) => socket.write(Buffer.from(bytes, 'latin1')));
      const failure = await get(newClient(), server.url()).catch((cause: unknown) => cause);
      expect(failure).toBeInstanceOf(MalformedResponse);
      expect(failure).toMatchObject({ code: 'MODELSYNC_MALFORMED_RESPONSE' });
      await closes(server.sockets[0]!);
    });

    it('fails with ECONNRESET when the connection closes before a whole head', async () => {
      const server = await rawServer(({ socket }) => socket.end(crlf('HTTP/1.1 200 OK\nContent-Len')));
      await expect(get(newClient(), server.url())).rejects.toMatchObject({ code: 'ECONNRESET' });
    });

    it('fails readInto with ECONNRESET when the connection closes before Content-Length bytes came', async () => {
      const server = await rawServer(({ socket }) => {
        socket.write(rawHead('HTTP/1.1 206 Partial Content\nContent-Length: 300000'));
        setTimeout(() => socket.end(body.subarray(0, 200_000)), 10);
      });
      const sink = new TwoBufferSink();
      const response = await get(newClient(), server.url());
      await expect(response.body.readInto(sink)).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect((await sink.data()).equals(body.subarray(0, sink.received))).toBe(true);
    });

    it('fails a streamed body with ECONNRESET when the connection closes before Content-Length bytes came', async () => {
      const server = await rawServer(({ socket }) =>
        socket.end(rawAnswer('HTTP/1.1 200 OK\nContent-Length: 10', '12345')),
      );
      await expect(readAll((await get(newClient(), server.url())).body)).rejects.toMatchObject({
        code: 'ECONNRESET',
      });
    });

    it('fails a streamed body with ECONNRESET when the connection closes before the last chunk', async () => {
      const server = await rawServer(({ socket }) =>
        socket.end(rawAnswer('HTTP/1.1 200 OK\nTransfer-Encoding: chunked', '5\nhello\n')),
      );
      await expect(readAll((await get(newClient(), server.url())).body)).rejects.toMatchObject({
        code: 'ECONNRESET',
      });
    });

    it('fails a streamed body with MalformedResponse when a chunk is malformed', async () => {
      const server = await rawServer(({ socket }) =>
        socket.write(rawAnswer('HTTP/1.1 200 OK\nTransfer-Encoding: chunked', '5\nhelloX\n0\n\n')),
      );
      await expect(readAll((await get(newClient(), server.url())).body)).rejects.toBeInstanceOf(
        MalformedResponse,
      );
      await closes(server.sockets[0]!);
    });

    describe('bytes past the end of a body', () => {
      const unasked = lengthAnswer('evil');

      /** Answers the first request with `first`, every later one (on any connection) with "good". */
      const answering = (first: (socket: Socket) => void) =>
        rawServer(({ socket, connection, nth }) =>
          connection === 0 && nth === 0 ? first(socket) : socket.write(lengthAnswer('good')),
        );

      it('fails readInto with MalformedResponse and does not reuse the connection when they come with the body', async () => {
        const server = await answering((socket) =>
          socket.write(Buffer.concat([lengthAnswer('hello'), unasked])),
        );
        const client = newClient();
        await expect(
          (await get(client, server.url())).body.readInto(new TwoBufferSink()),
        ).rejects.toBeInstanceOf(MalformedResponse);
        expect((await readAll((await get(client, server.url())).body)).toString()).toBe('good');
        expect(server.sockets).toHaveLength(2);
      });

      it('fails a streamed body with MalformedResponse and does not reuse the connection when they come with it', async () => {
        const server = await answering((socket) =>
          socket.write(Buffer.concat([lengthAnswer('hello'), unasked])),
        );
        const client = newClient();
        await expect(readAll((await get(client, server.url())).body)).rejects.toBeInstanceOf(
          MalformedResponse,
        );
        expect((await readAll((await get(client, server.url())).body)).toString()).toBe('good');
        expect(server.sockets).toHaveLength(2);
      });

      it('fails a chunked body with MalformedResponse when bytes follow its last chunk', async () => {
        const server = await answering((socket) =>
          socket.write(
            Buffer.concat([
              rawHead('HTTP/1.1 200 OK\nTransfer-Encoding: chunked'),
              crlf('5\nhello\n0\n\n'),
              unasked,
            ]),
          ),
        );
        const client = newClient();
        await expect(readAll((await get(client, server.url())).body)).rejects.toBeInstanceOf(
          MalformedResponse,
        );
        expect((await readAll((await get(client, server.url())).body)).toString()).toBe('good');
      });

      it('never answers the next request with them when they follow the last bytes read straight into the sink', async () => {
        // The body comes in three writes: its head; a first piece (read where the head was, then copied); the rest
        // with the unasked answer behind it, written once the first piece landed, so that it is read into the sink.
        let socketOf: Socket | undefined;
        const server = await answering((socket) => {
          socketOf = socket;
          socket.write(rawHead('HTTP/1.1 206 Partial Content\nContent-Length: 20000'));
        });
        const client = newClient();
        const response = await get(client, server.url());
        const sink = new TwoBufferSink({
          onLanded: (total) => {
            if (total === 10_000) socketOf!.write(Buffer.concat([body.subarray(10_000, 20_000), unasked]));
          },
        });
        const reading = response.body.readInto(sink);
        await sleep(20);
        socketOf!.write(body.subarray(0, 10_000));
        await reading.catch(() => undefined);
        expect((await sink.data()).equals(body.subarray(0, 20_000))).toBe(true);
        const next = await get(client, server.url());
        expect((await readAll(next.body)).toString()).toBe('good');
        expect(server.sockets).toHaveLength(2);
      });

      it('drops a kept-alive connection when an answer nobody asked for comes on it while it is idle', async () => {
        const server = await answering((socket) => {
          socket.write(lengthAnswer('hello'));
          setTimeout(() => socket.write(unasked), 50);
        });
        const client = newClient();
        expect((await readAll((await get(client, server.url())).body)).toString()).toBe('hello');
        await closes(server.sockets[0]!);
        expect((await readAll((await get(client, server.url())).body)).toString()).toBe('good');
        expect(server.sockets).toHaveLength(2);
      });

      it('drops a kept-alive connection when garbage comes on it while it is idle', async () => {
        const server = await answering((socket) => {
          socket.write(lengthAnswer('hello'));
          setTimeout(() => socket.write('\x00\x01garbage'), 50);
        });
        const client = newClient();
        await readAll((await get(client, server.url())).body);
        await closes(server.sockets[0]!);
        expect((await readAll((await get(client, server.url())).body)).toString()).toBe('good');
      });
    });

    it('fails readInto with a body timeout and closes the connection when the server stalls mid-body', async () => {
      const server = await httpServer(stalls(body, 100 * KiB));
      const response = await get(newClient(), server.url(), { idleTimeoutMs: 300 });
      const sink = new TwoBufferSink();
      const failure = await response.body.readInto(sink).catch((cause: unknown) => cause);
      expect(failure).toBeInstanceOf(DirectTimeout);
      expect(failure).toMatchObject({ name: 'TimeoutError', code: 'MODELSYNC_BODY_TIMEOUT' });
      expect((await sink.data()).equals(body.subarray(0, 100 * KiB))).toBe(true);
      await closes(server.sockets[0]!);
    });

    it('fails a streamed body with a body timeout when the server stalls mid-body', async () => {
      const server = await httpServer(stalls(body, 100 * KiB));
      const response = await get(newClient(), server.url(), { idleTimeoutMs: 300 });
      await expect(readAll(response.body)).rejects.toMatchObject({ code: 'MODELSYNC_BODY_TIMEOUT' });
      await closes(server.sockets[0]!);
    });
  });

  describe('abort', () => {
    it('rejects promptly with the abort reason and closes the connection when aborted mid-head', async () => {
      const server = await rawServer(({ socket }) => socket.write(crlf('HTTP/1.1 200 OK\n')));
      const controller = new AbortController();
      const reason = new Error('stop now');
      const getting = get(newClient(), server.url(), { signal: controller.signal });
      await sleep(50);
      controller.abort(reason);
      // The abort's own reason: no timer of the client's ended it.
      await expect(getting).rejects.toBe(reason);
      await closes(server.sockets[0]!);
    });

    it('rejects readInto with the abort reason and closes the connection when aborted mid-body', async () => {
      const server = await httpServer(stalls(body, 100 * KiB));
      const controller = new AbortController();
      const reason = new Error('stop now');
      const response = await get(newClient(), server.url(), { signal: controller.signal });
      const sink = new TwoBufferSink({ onLanded: (total) => total >= 50 * KiB && controller.abort(reason) });
      await expect(response.body.readInto(sink)).rejects.toBe(reason);
      await closes(server.sockets[0]!);
    });

    it('fails a streamed body with the abort reason when aborted mid-body', async () => {
      const server = await httpServer(stalls(body, 100 * KiB));
      const controller = new AbortController();
      const reason = new Error('stop now');
      const response = await get(newClient(), server.url(), { signal: controller.signal });
      const reading = readAll(response.body);
      await sleep(50);
      controller.abort(reason);
      await expect(reading).rejects.toBe(reason);
      await closes(server.sockets[0]!);
    });

    it('fails a body not read yet with the abort reason when aborted before it is read', async () => {
      const server = await httpServer(stalls(body, 100 * KiB));
      const controller = new AbortController();
      const reason = new Error('stop now');
      const response = await get(newClient(), server.url(), { signal: controller.signal });
      controller.abort(reason);
      await closes(server.sockets[0]!);
      await expect(response.body.readInto(new TwoBufferSink())).rejects.toBe(reason);
    });

    it('rejects with the abort reason when the signal is aborted before the request', async () => {
      const server = await httpServer(ranged(body));
      const reason = new Error('too late');
      await expect(get(newClient(), server.url(), { signal: AbortSignal.abort(reason) })).rejects.toBe(
        reason,
      );
      expect(server.requests).toHaveLength(0);
    });

    it('rejects with an AbortError when aborted with no reason of its own', async () => {
      const server = await rawServer(() => undefined);
      const controller = new AbortController();
      const getting = get(newClient(), server.url(), { signal: controller.signal });
      await sleep(20);
      controller.abort();
      await expect(getting).rejects.toMatchObject({ name: 'AbortError' });
    });

    it('leaves no abort listener on the signal when a body was read whole', async () => {
      const server = await httpServer(ranged(body));
      const signal = new AbortController().signal;
      const client = newClient();
      await (await get(client, server.url(), { signal })).body.readInto(new TwoBufferSink());
      await readAll((await get(client, server.url(), { signal })).body);
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    });

    it('leaves no abort listener on the signal when a request failed', async () => {
      const server = await rawServer(({ socket }) => socket.write('garbage\r\n\r\n'));
      const signal = new AbortController().signal;
      await expect(get(newClient(), server.url(), { signal })).rejects.toBeInstanceOf(MalformedResponse);
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    });
  });

  describe('keep-alive', () => {
    it('sends the next request on a new connection when the server closed the idle one', async () => {
      const server = await rawServer(({ socket }) => {
        socket.write(lengthAnswer('hello'));
        setTimeout(() => socket.end(), 20);
      });
      const client = newClient();
      await readAll((await get(client, server.url())).body);
      await closes(server.sockets[0]!); // closed on both sides: the client has seen it go
      expect((await readAll((await get(client, server.url())).body)).toString()).toBe('hello');
      expect(server.sockets).toHaveLength(2);
    });

    it('closes its side of an idle connection when the server closes its own', async () => {
      const server = await rawServer(({ socket }) => {
        socket.write(lengthAnswer('hello'));
        setTimeout(() => socket.end(), 20);
      });
      await (await get(newClient(), server.url())).body.readInto(new TwoBufferSink());
      await closes(server.sockets[0]!);
    });

    it('sends a request once more on a new connection when a kept-alive one fails before any answer', async () => {
      const server = await rawServer(({ socket, nth }) =>
        nth === 0 ? socket.write(lengthAnswer('hello')) : socket.destroy(),
      );
      const client = newClient();
      await readAll((await get(client, server.url())).body);
      expect((await readAll((await get(client, server.url())).body)).toString()).toBe('hello');
      expect(server.sockets).toHaveLength(2);
      expect(server.heads).toHaveLength(3);
    });

    it('sends the retry on a new connection when more kept-alive ones are idle', async () => {
      const server = await rawServer(({ socket, nth }) =>
        nth === 0 ? socket.write(lengthAnswer('hello')) : socket.destroy(),
      );
      const client = newClient();
      const [first, second] = await Promise.all([get(client, server.url()), get(client, server.url())]);
      await Promise.all([readAll(first.body), readAll(second.body)]);
      expect(server.sockets).toHaveLength(2);
      expect((await readAll((await get(client, server.url())).body)).toString()).toBe('hello');
      expect(server.sockets).toHaveLength(3);
    });

    it('does not send a request again when the kept-alive connection failed after answering a byte', async () => {
      const server = await rawServer(({ socket, nth }) =>
        nth === 0 ? socket.write(lengthAnswer('hello')) : socket.end('HTTP/1.1 2'),
      );
      const client = newClient();
      await readAll((await get(client, server.url())).body);
      await expect(get(client, server.url())).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(server.sockets).toHaveLength(1);
    });

    it('does not send a request again when a new connection fails before any answer', async () => {
      const server = await rawServer(({ socket }) => socket.destroy());
      await expect(get(newClient(), server.url())).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(server.sockets).toHaveLength(1);
    });

    it('does not send a request again when a kept-alive connection times out waiting for the head', async () => {
      const server = await rawServer(({ socket, nth }) =>
        nth === 0 ? socket.write(lengthAnswer('hello')) : undefined,
      );
      const client = newClient();
      await readAll((await get(client, server.url())).body);
      await expect(get(client, server.url(), { headersTimeoutMs: 200 })).rejects.toBeInstanceOf(
        DirectTimeout,
      );
      expect(server.sockets).toHaveLength(1);
    });

    it('does not reuse a connection when the answer says Connection: close', async () => {
      const server = await rawServer(({ socket }) =>
        socket.write(rawAnswer('HTTP/1.1 200 OK\nContent-Length: 5\nConnection: close', 'hello')),
      );
      const client = newClient();
      await readAll((await get(client, server.url())).body);
      await closes(server.sockets[0]!);
      await readAll((await get(client, server.url())).body);
      expect(server.sockets).toHaveLength(2);
    });

    it('does not reuse a connection when the answer is HTTP/1.0', async () => {
      const server = await rawServer(({ socket }) =>
        socket.write(rawAnswer('HTTP/1.0 200 OK\nContent-Length: 5\nConnection: keep-alive', 'hello')),
      );
      const client = newClient();
      await (await get(client, server.url())).body.readInto(new TwoBufferSink());
      await closes(server.sockets[0]!);
    });

    it('does not reuse a connection when the answer had both Transfer-Encoding and Content-Length', async () => {
      const server = await rawServer(({ socket }) =>
        socket.write(
          rawAnswer('HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nContent-Length: 5', '5\nhello\n0\n\n'),
        ),
      );
      const client = newClient();
      expect((await readAll((await get(client, server.url())).body)).toString()).toBe('hello');
      await closes(server.sockets[0]!);
    });

    it('opens one connection per request when requests run at once', async () => {
      const server = await httpServer(ranged(body.subarray(0, 10_000)));
      const client = newClient();
      const responses = await Promise.all([1, 2, 3].map(() => get(client, server.url())));
      await Promise.all(responses.map((response) => readAll(response.body)));
      expect(server.sockets).toHaveLength(3);
      await Promise.all([1, 2, 3].map(async () => readAll((await get(client, server.url())).body)));
      expect(server.sockets).toHaveLength(3);
    });

    it('keeps at most perOrigin idle connections when more bodies end', async () => {
      const server = await httpServer(ranged(body.subarray(0, 10_000)));
      // The one kept would idle out only after a minute: the two that go are the ones past perOrigin.
      const client = newClient({ rejectUnauthorized: true }, { perOrigin: 1, idleMs: 60_000 });
      const responses = await Promise.all([1, 2, 3].map(() => get(client, server.url())));
      for (const response of responses) await readAll(response.body);
      const closed = (): number => server.sockets.filter((socket) => socket.closed).length;
      await waitFor(() => closed() >= 2, 10_000, 'two connections closed');
      // The third was kept: the next request goes on it, on no new connection.
      await readAll((await get(client, server.url())).body);
      expect([closed(), server.sockets.length]).toEqual([2, 3]);
    });

    it('closes an idle connection when it has been idle for idleMs', async () => {
      const server = await httpServer(ranged(body.subarray(0, 10_000)));
      const client = newClient({ rejectUnauthorized: true }, { perOrigin: 4, idleMs: 100 });
      await readAll((await get(client, server.url())).body);
      const started = performance.now();
      await closes(server.sockets[0]!);
      expect(performance.now() - started).toBeGreaterThanOrEqual(50);
    });

    it('closes its idle connections when closed', async () => {
      const server = await httpServer(ranged(body.subarray(0, 10_000)));
      const client = newClient();
      await readAll((await get(client, server.url())).body);
      client.close();
      await closes(server.sockets[0]!);
    });

    it('closes a connection whose body ends after the client was closed', async () => {
      const server = await httpServer(ranged(body.subarray(0, 10_000)));
      const client = newClient();
      const response = await get(client, server.url());
      client.close();
      await readAll(response.body);
      await closes(server.sockets[0]!);
    });

    it('does not keep the process alive with an idle connection', async () => {
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer(body.subarray(0, 10_000))), {
        unref: true,
      });
      const sockets = (): number =>
        process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap').length;
      const before = sockets();
      const client = newClient();
      const response = await get(client, server.url());
      expect(sockets()).toBe(before + 1);
      await readAll(response.body);
      expect(sockets()).toBe(before);
      await readAll((await get(client, server.url())).body);
      expect(server.sockets).toHaveLength(1);
      expect(sockets()).toBe(before);
    });

    it('rejects with ECONNREFUSED when nothing listens', async () => {
      await expect(
        get(newClient(), new URL(`http://127.0.0.1:${await closedPort()}/x`)),
      ).rejects.toMatchObject({
        code: 'ECONNREFUSED',
      });
    });
  });

  describe('request heads', () => {
    it('sends the path, query, host and headers as given when it sends a GET', async () => {
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer('')));
      const url = server.url('/a%20b/c.bin?x=1&y=%2F');
      await get(newClient(), url, { headers: { Range: 'bytes=0-9', 'x-amz-date': '20260101T000000Z' } });
      expect(server.heads).toEqual([
        `GET /a%20b/c.bin?x=1&y=%2F HTTP/1.1\r\nhost: ${url.host}\r\nRange: bytes=0-9\r\nx-amz-date: 20260101T000000Z\r\n\r\n`,
      ]);
    });

    it('sends obs-text in a value as one byte each, as node:http does, when a header has it', async () => {
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer('')));
      await get(newClient(), server.url(), { headers: { 'x-a': 'caf\xe9 \xff' } });
      expect(server.heads[0]).toContain('\r\nx-a: caf\xe9 \xff\r\n');
    });

    it.each([
      ['a CRLF in a value', { 'x-a': 'b\r\nX-Injected: 1' }],
      ['a bare LF in a value', { 'x-a': 'b\nX-Injected: 1' }],
      ['a bare CR in a value', { 'x-a': 'b\rc' }],
      ['a NUL in a value', { 'x-a': 'b\x00c' }],
      ['a CRLF in a name', { 'x-a\r\nX-Injected': '1' }],
      ['a colon in a name', { 'x-a:': 'b' }],
      ['a space in a name', { 'x a': 'b' }],
      ['an empty name', { '': 'b' }],
      ['a character past latin1 in a value', { 'x-a': '\u2028' }],
    ])('refuses %s with ERR_INVALID_CHAR before connecting', async (_what, headers) => {
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer('')));
      await expect(get(newClient(), server.url(), { headers })).rejects.toMatchObject({
        code: 'ERR_INVALID_CHAR',
      });
      await sleep(50);
      expect(server.sockets).toHaveLength(0);
    });
  });

  describe('over TLS', () => {
    const trusting = (): DirectClient => newClient({ rejectUnauthorized: true, ca: [tlsFixture('ca.pem')] });

    it('lands a 206 body byte-exact in a sink and reuses the connection when the server’s CA is trusted', async () => {
      const server = await httpServer(ranged(body), { tls: serverTls() });
      const client = trusting();
      for (const _ of [1, 2]) {
        const sink = new TwoBufferSink({ writeMs: 2, waitEvery: 5 });
        await expect((await get(client, server.url())).body.readInto(sink)).resolves.toBe(true);
        expect(sink.faults).toEqual([]);
        expect((await sink.data()).equals(body)).toBe(true);
      }
      expect(server.sockets).toHaveLength(1);
    });

    it('lands the body bytes that came with the head when the body is read a while after it', async () => {
      const bytes = body.subarray(0, 300_000);
      const server = await rawServer(
        ({ socket }) => socket.write(lengthAnswer(bytes, '206 Partial Content')),
        {
          tls: true,
        },
      );
      const response = await get(trusting(), server.url());
      await sleep(50);
      const sink = new TwoBufferSink();
      await expect(response.body.readInto(sink)).resolves.toBe(true);
      expect((await sink.data()).equals(bytes)).toBe(true);
    });

    it('streams the body bytes that came with the head when the body is read a while after it', async () => {
      const bytes = body.subarray(0, 300_000);
      const server = await rawServer(({ socket }) => socket.write(lengthAnswer(bytes)), { tls: true });
      const response = await get(trusting(), server.url());
      await sleep(50);
      expect((await readAll(response.body)).equals(bytes)).toBe(true);
    });

    it('streams a body byte-exact when its consumer is slow and the socket is paused', async () => {
      const server = await httpServer(ranged(body), { tls: serverTls() });
      const chunks: Buffer[] = [];
      for await (const chunk of (await get(trusting(), server.url())).body) {
        chunks.push(Buffer.from(chunk as Uint8Array));
        await sleep(1);
      }
      expect(Buffer.concat(chunks).equals(body)).toBe(true);
    });

    it('streams a chunked body byte-exact when the server’s CA is trusted', async () => {
      const server = await httpServer(
        (_request, response) => {
          response.write(body.subarray(0, 5));
          response.end(body.subarray(5));
        },
        { tls: serverTls() },
      );
      expect((await readAll((await get(trusting(), server.url())).body)).equals(body)).toBe(true);
    });

    it('refuses a certificate when its CA is not trusted', async () => {
      const server = await httpServer(ranged(body), { tls: serverTls() });
      const failure = await get(newClient(), server.url()).catch((cause: unknown) => cause);
      expect(failure).toMatchObject({ code: expect.stringMatching(/CERT|SIGNATURE|ISSUER/) as unknown });
      expect(server.requests).toHaveLength(0);
    });

    it('refuses a certificate when it does not name the host connected to', async () => {
      const server = await httpServer(ranged(body), { tls: serverTls(), host: '0.0.0.0' });
      const url = server.url();
      url.hostname = '127.0.0.2';
      await expect(get(trusting(), url)).rejects.toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
      expect(server.requests).toHaveLength(0);
    });

    it('accepts the certificate by name when connecting to localhost', async () => {
      const server = await httpServer(ranged(body.subarray(0, 1000)), { tls: serverTls() });
      const url = server.url();
      url.hostname = 'localhost';
      expect((await readAll((await get(trusting(), url)).body)).equals(body.subarray(0, 1000))).toBe(true);
    });

    it('accepts an untrusted certificate when rejectUnauthorized is false', async () => {
      const server = await httpServer(ranged(body.subarray(0, 1000)), { tls: serverTls() });
      const client = newClient({ rejectUnauthorized: false });
      expect((await readAll((await get(client, server.url())).body)).equals(body.subarray(0, 1000))).toBe(
        true,
      );
    });

    it('resumes the TLS session when it opens another connection to the same origin', async () => {
      const resumed: boolean[] = [];
      const server = await httpServer(
        (request, response) => {
          resumed.push((request.socket as TLSSocket).isSessionReused());
          ranged(body)(request, response);
        },
        { tls: serverTls() },
      );
      const client = trusting();
      const sink = new TwoBufferSink({ limit: 1000 });
      await expect((await get(client, server.url())).body.readInto(sink)).resolves.toBe(false);
      await (await get(client, server.url())).body.readInto(new TwoBufferSink());
      expect(server.sockets).toHaveLength(2);
      expect(resumed).toEqual([false, true]);
    });

    it('fails with a connect timeout when the server never completes the handshake', async () => {
      const server = await rawServer(() => undefined);
      const url = server.url();
      url.protocol = 'https:';
      await expect(get(trusting(), url, { headersTimeoutMs: 300 })).rejects.toMatchObject({
        name: 'TimeoutError',
        code: 'MODELSYNC_CONNECT_TIMEOUT',
      });
      await closes(server.sockets[0]!);
    });

    it('rejects with the abort reason when aborted during the handshake', async () => {
      const server = await rawServer(() => undefined);
      const url = server.url();
      url.protocol = 'https:';
      const controller = new AbortController();
      const reason = new Error('stop now');
      const getting = get(trusting(), url, { signal: controller.signal });
      await sleep(50);
      controller.abort(reason);
      await expect(getting).rejects.toBe(reason);
      await closes(server.sockets[0]!);
    });
  });
});

describe('requestHead', () => {
  it('writes the URL’s host and drops a host header given when headers name one', () => {
    expect(requestHead(new URL('http://example.com:8080/x'), { Host: 'evil', HOST: 'evil' })).toBe(
      'GET /x HTTP/1.1\r\nhost: example.com:8080\r\n\r\n',
    );
  });

  it('writes "/" as the path when the URL has none', () => {
    expect(requestHead(new URL('https://[::1]'), {})).toBe('GET / HTTP/1.1\r\nhost: [::1]\r\n\r\n');
  });

  it('accepts tabs and obs-text in a value when a header has them', () => {
    expect(requestHead(new URL('http://h/'), { 'x-a': 'a\tb \xe9' })).toContain('x-a: a\tb \xe9\r\n');
  });

  it('throws ERR_INVALID_CHAR naming the header when a value has a CR or LF', () => {
    let failure: unknown;
    try {
      requestHead(new URL('http://h/'), { 'x-a': 'b\r\nX-Injected: 1' });
    } catch (cause) {
      failure = cause;
    }
    expect(failure).toBeInstanceOf(TypeError);
    expect(failure).toMatchObject({
      code: 'ERR_INVALID_CHAR',
      message: expect.stringContaining('"x-a"') as unknown,
    });
  });
});
