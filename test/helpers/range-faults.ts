/**
 * Every way a ranged read can go wrong, as raw bytes on the socket: the answers, heads, framings and connection
 * ends a storage server (or anything between it and us) can produce for a `Range` request. `faultServer`
 * (range-fault-server.ts) plays one of them.
 */
import type { Socket } from 'node:net';

/** The range a request asked for, `[start, end)`, and the file it is a range of. */
export interface AskedRange {
  readonly start: number;
  readonly end: number;
  readonly size: number;
  readonly etag: string;
  /** The file's bytes `[from, to)`. */
  readonly bytes: (from: number, to: number) => Buffer;
  /** Where redirects may point: this server's own base URL. */
  readonly origin: string;
}

/** One fault: what it does to the socket of a ranged request. */
export interface RangeFault {
  readonly name: string;
  readonly play: (socket: Socket, asked: AskedRange) => void;
  /** Played once and then never again, the download must still end with the whole file (a transient fault). */
  readonly passes?: boolean;
}

const crlf = (lines: ReadonlyArray<string>): string => `${lines.join('\r\n')}\r\n\r\n`;

/** A well-formed 206 head for `asked`, with `extra` header lines. */
const partialHead = (asked: AskedRange, extra: ReadonlyArray<string> = []): string[] => [
  'HTTP/1.1 206 Partial Content',
  `Content-Range: bytes ${asked.start}-${asked.end - 1}/${asked.size}`,
  `ETag: ${asked.etag}`,
  'Accept-Ranges: bytes',
  ...extra,
];

/** The range's own bytes after the head `lines(asked)` gives, then a close: a fault that lies in the head alone. */
const rangeAfter =
  (lines: (asked: AskedRange) => ReadonlyArray<string>): RangeFault['play'] =>
  (socket, asked) =>
    send(socket, crlf(lines(asked)), asked.bytes(asked.start, asked.end));

/** The Content-Length of the range `asked`. */
const lengthOf = (asked: AskedRange): string => `Content-Length: ${asked.end - asked.start}`;

/** Writes `head` and `body`, then closes (or, with `close: false`, leaves the socket open: a server that stalls). */
const send = (socket: Socket, head: string, body: Buffer | string = '', close = true): void => {
  socket.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]));
  if (close) socket.end();
};

/** An answer `status` with a short text body, closed after it. */
const statusAnswer =
  (status: string, extra: ReadonlyArray<string> = []): RangeFault['play'] =>
  (socket) =>
    send(
      socket,
      crlf([`HTTP/1.1 ${status}`, 'Content-Type: text/plain', 'Content-Length: 5', ...extra]),
      'nope\n',
    );

/** Writes `total` bytes of filler after `head`, as fast as the client takes them, then closes. */
const endlessBody = (socket: Socket, head: string, total: number): void => {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let left = total;
  socket.write(head, 'latin1');
  const pump = (): void => {
    while (left > 0 && !socket.destroyed) {
      left -= chunk.length;
      if (!socket.write(chunk)) return void socket.once('drain', pump);
    }
    socket.end();
  };
  pump();
};

const mebibyte = 2 ** 20;

/** The catalogue: every fault the ranged engine can meet, each a way a real peer or middlebox has been seen to fail. */
export const rangeFaults: ReadonlyArray<RangeFault> = [
  // Statuses.
  { name: 'a 503 with a short body', play: statusAnswer('503 Service Unavailable'), passes: true },
  { name: 'a 500', play: statusAnswer('500 Internal Server Error'), passes: true },
  {
    name: 'a 429 with Retry-After',
    play: statusAnswer('429 Too Many Requests', ['Retry-After: 1']),
    passes: true,
  },
  { name: 'a 404 (the object is gone)', play: statusAnswer('404 Not Found') },
  { name: 'a 403', play: statusAnswer('403 Forbidden') },
  {
    name: 'a 416 for a range inside the file',
    play: (socket, asked) =>
      send(
        socket,
        crlf([
          'HTTP/1.1 416 Range Not Satisfiable',
          `Content-Range: bytes */${asked.size}`,
          'Content-Length: 0',
        ]),
      ),
  },
  {
    name: 'a huge error page (503 of 256 MiB)',
    play: (socket) =>
      endlessBody(
        socket,
        crlf(['HTTP/1.1 503 Service Unavailable', `Content-Length: ${256 * mebibyte}`]),
        256 * mebibyte,
      ),
    passes: true,
  },
  {
    name: 'an endless chunked error page',
    play: (socket) => {
      const chunk = Buffer.concat([
        Buffer.from('10000\r\n'),
        Buffer.alloc(0x10000, 'e'),
        Buffer.from('\r\n'),
      ]);
      socket.write(crlf(['HTTP/1.1 500 Internal Server Error', 'Transfer-Encoding: chunked']));
      const pump = (): void => {
        while (!socket.destroyed) if (!socket.write(chunk)) return void socket.once('drain', pump);
      };
      pump();
    },
    passes: true,
  },
  {
    name: 'a redirect to a port nobody listens on',
    play: (socket) =>
      send(
        socket,
        crlf(['HTTP/1.1 302 Found', 'Location: http://127.0.0.1:1/weights.bin', 'Content-Length: 0']),
      ),
    passes: true,
  },
  {
    name: 'a redirect to itself',
    play: (socket, asked) =>
      send(
        socket,
        crlf(['HTTP/1.1 302 Found', `Location: ${asked.origin}/weights.bin`, 'Content-Length: 0']),
      ),
  },
  // Connections.
  { name: 'the connection closed before an answer', play: (socket) => void socket.end(), passes: true },
  {
    name: 'the connection reset before an answer',
    play: (socket) => void socket.resetAndDestroy(),
    passes: true,
  },
  {
    name: 'the connection closed mid-head',
    play: (socket) => send(socket, 'HTTP/1.1 206 Partial Content\r\nContent-Le'),
    passes: true,
  },
  {
    name: 'the connection closed mid-body',
    play: (socket, asked) => {
      const half = asked.start + Math.floor((asked.end - asked.start) / 2);
      send(socket, crlf(partialHead(asked, [lengthOf(asked)])), asked.bytes(asked.start, half));
    },
    passes: true,
  },
  {
    name: 'the connection reset mid-body',
    play: (socket, asked) => {
      const head = crlf(partialHead(asked, [lengthOf(asked)]));
      socket.write(Buffer.concat([Buffer.from(head), asked.bytes(asked.start, asked.start + 100_000)]), () =>
        socket.resetAndDestroy(),
      );
    },
    passes: true,
  },
  { name: 'a stall before the head', play: () => undefined, passes: true },
  {
    name: 'a stall after the head',
    play: (socket, asked) => send(socket, crlf(partialHead(asked, [lengthOf(asked)])), '', false),
    passes: true,
  },
  // Heads no HTTP/1.1 server may send.
  {
    name: 'an LF-only head',
    play: (socket, asked) =>
      send(
        socket,
        `${partialHead(asked, [lengthOf(asked)]).join('\n')}\n\n`,
        asked.bytes(asked.start, asked.end),
      ),
  },
  {
    name: 'a folded header',
    play: rangeAfter((asked) => partialHead(asked, [lengthOf(asked), 'X-Folded: one', ' two'])),
  },
  {
    name: 'a NUL in a header',
    play: rangeAfter((asked) => partialHead(asked, [lengthOf(asked), 'X-Nul: a\0b'])),
  },
  {
    name: 'two Content-Lengths that differ',
    play: rangeAfter((asked) =>
      partialHead(asked, [lengthOf(asked), `Content-Length: ${asked.end - asked.start + 1}`]),
    ),
  },
  {
    name: 'Content-Length and chunked together',
    play: (socket, asked) => {
      const body = asked.bytes(asked.start, asked.end);
      send(
        socket,
        crlf(partialHead(asked, [`Content-Length: ${body.length}`, 'Transfer-Encoding: chunked'])),
        Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]),
      );
    },
  },
  {
    name: 'a negative Content-Length',
    play: rangeAfter((asked) => partialHead(asked, ['Content-Length: -1'])),
  },
  { name: 'a status line that is no HTTP', play: (socket) => send(socket, 'HELLO THERE\r\n\r\n') },
  {
    name: 'bytes that are no HTTP at all (a TLS alert)',
    play: (socket) =>
      send(socket, Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46]).toString('latin1')),
  },
  {
    name: 'a head of 1 MiB',
    play: rangeAfter((asked) => partialHead(asked, [lengthOf(asked), `X-Big: ${'h'.repeat(mebibyte)}`])),
  },
  // Chunked framing.
  {
    name: 'a chunk size of ffffffffffffffff',
    play: (socket, asked) =>
      send(
        socket,
        crlf(partialHead(asked, ['Transfer-Encoding: chunked'])),
        `ffffffffffffffff\r\n${'x'.repeat(4096)}`,
      ),
  },
  {
    name: 'a cut chunk',
    play: (socket, asked) =>
      send(
        socket,
        crlf(partialHead(asked, ['Transfer-Encoding: chunked'])),
        // A chunk of 4 MiB announced, 256 KiB of it sent: each read makes progress, so the range is resumed.
        Buffer.concat([Buffer.from('400000\r\n'), asked.bytes(asked.start, asked.start + 256 * 1024)]),
      ),
    passes: true,
  },
  {
    name: 'a chunk without its CRLF',
    play: (socket, asked) =>
      send(
        socket,
        crlf(partialHead(asked, ['Transfer-Encoding: chunked'])),
        Buffer.concat([
          Buffer.from('400\r\n'),
          asked.bytes(asked.start, asked.start + 1024),
          Buffer.from('XX400\r\n'),
        ]),
      ),
  },
  // Answers of the wrong bytes.
  {
    name: 'a 200 with the whole file (the Range ignored)',
    play: (socket, asked) =>
      endlessBody(
        socket,
        crlf(['HTTP/1.1 200 OK', `ETag: ${asked.etag}`, `Content-Length: ${asked.size}`]),
        asked.size,
      ),
  },
  {
    name: 'a 206 for another range',
    play: (socket, asked) => {
      const start = asked.start === 0 ? mebibyte : 0;
      const end = start + (asked.end - asked.start);
      send(
        socket,
        crlf([
          'HTTP/1.1 206 Partial Content',
          `Content-Range: bytes ${start}-${end - 1}/${asked.size}`,
          `ETag: ${asked.etag}`,
          `Content-Length: ${end - start}`,
        ]),
        asked.bytes(start, Math.min(end, asked.size)),
      );
    },
  },
  {
    name: 'a 206 of a file of another size',
    play: rangeAfter((asked) => [
      'HTTP/1.1 206 Partial Content',
      `Content-Range: bytes ${asked.start}-${asked.end - 1}/${asked.size + 1}`,
      `ETag: ${asked.etag}`,
      lengthOf(asked),
    ]),
  },
  {
    name: 'a 206 without Content-Range',
    play: rangeAfter((asked) => ['HTTP/1.1 206 Partial Content', `ETag: ${asked.etag}`, lengthOf(asked)]),
  },
  {
    name: 'a 206 of another version (another ETag)',
    play: (socket, asked) =>
      send(
        socket,
        crlf([...partialHead({ ...asked, etag: '"other"' }), lengthOf(asked)]),
        Buffer.alloc(asked.end - asked.start, 'o'),
      ),
    passes: true,
  },
  {
    name: 'a 206 that runs past its range (close-delimited)',
    play: (socket, asked) =>
      send(
        socket,
        crlf(partialHead(asked)),
        Buffer.concat([asked.bytes(asked.start, asked.end), Buffer.alloc(mebibyte, 'p')]),
      ),
  },
  {
    name: 'a 206 shorter than its range',
    play: (socket, asked) => {
      const length = Math.floor((asked.end - asked.start) / 2);
      send(
        socket,
        crlf(partialHead(asked, [`Content-Length: ${length}`])),
        asked.bytes(asked.start, asked.start + length),
      );
    },
    passes: true,
  },
  {
    name: 'a 206 as multipart/byteranges',
    play: (socket, asked) => {
      const part = Buffer.concat([
        Buffer.from(
          `--b\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes ${asked.start}-${asked.end - 1}/${asked.size}\r\n\r\n`,
        ),
        asked.bytes(asked.start, asked.end),
        Buffer.from('\r\n--b--\r\n'),
      ]);
      send(
        socket,
        crlf([
          'HTTP/1.1 206 Partial Content',
          'Content-Type: multipart/byteranges; boundary=b',
          `ETag: ${asked.etag}`,
          `Content-Length: ${part.length}`,
        ]),
        part,
      );
    },
  },
];
