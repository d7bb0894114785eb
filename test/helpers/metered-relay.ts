/**
 * startMeteredRelay: a TCP relay on 127.0.0.1 in front of one plain-HTTP server that meters what the server sends
 * back (per connection and in total), holds each connection to a rate (a token bucket that pauses the upstream
 * socket), notes the requests it carries (method, target, Range) and how many connections carry bytes at once, and
 * cuts one connection mid-response on demand — so a test can watch a ranged download from outside the process.
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/** One request a client sent through the relay (read from the bytes: HTTP/1.1, heads in plain text). */
export interface RelayedRequest {
  /** The connection it came on: 1-based, in accept order. */
  readonly connection: number;
  readonly method: string;
  /** Path and query, as sent. */
  readonly target: string;
  /** Its `Range` (or Azure's `x-ms-range`) `bytes=<first>-[<last>]`, when it had one (no `last`: to the end). */
  readonly range?: { readonly first: number; readonly last?: number };
}

/** What one connection carried back to its client. */
export interface RelayConnection {
  /** 1-based, in accept order. */
  readonly index: number;
  /** Bytes relayed to the client (heads included). */
  readonly bytesToClient: number;
  /** Requests the client sent on it. */
  readonly requests: number;
}

/** Which response to cut, and where. */
export interface RelayCut {
  /**
   * Bytes of one response (its head included; on a kept-alive connection, counted from its request on) relayed
   * before the connection is destroyed, both sides.
   */
  readonly afterBytes: number;
  /**
   * Cut only the k-th connection to carry a response (1-based, in the order their first answer bytes came);
   * default: the first connection whose response gets to `afterBytes`.
   */
  readonly connection?: number;
  /** Cut only a response to a request this accepts (default: any). */
  readonly request?: (request: RelayedRequest) => boolean;
}

/** The cut, once made. */
export interface RelayCutMade {
  readonly connection: number;
  /** The request whose response was cut. */
  readonly request: RelayedRequest | undefined;
  /** Body bytes of that response the client was sent before the cut (the bytes after its head). */
  readonly bodyBytes: number;
}

/** A running relay. */
export interface MeteredRelay {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Bytes relayed to clients, every connection together. */
  readonly bytesToClients: number;
  readonly requests: ReadonlyArray<RelayedRequest>;
  readonly connections: ReadonlyArray<RelayConnection>;
  /**
   * Most connections that carried server bytes to their clients within one tick (10 ms); one that closed during the
   * tick is not counted (the client let go of it).
   */
  readonly peakActive: number;
  /** Each connection's rate from now on, in bytes per second (null: as fast as the client reads). */
  setRate(bytesPerSecond: number | null): void;
  /** Arms one cut; resolves once it is made. */
  cut(cut: RelayCut): Promise<RelayCutMade>;
  /** Resolves once `bytes` have been relayed to clients in total. */
  whenRelayed(bytes: number): Promise<void>;
  close(): Promise<void>;
}

const tickMs = 10;
// A late tick (a busy CPU) loses no more than this many ticks' tokens.
const burstTicks = 2;
const maxHeadScan = 16 * 1024;

interface Connection {
  readonly index: number;
  readonly client: Socket;
  readonly upstream: Socket;
  responding?: number;
  bytesToClient: number;
  requests: number;
  lastRequest?: RelayedRequest;
  /** Bytes of the current response relayed so far, and where its head ends once seen. */
  responseBytes: number;
  headBytes?: number;
  headScan: string;
  /** Client bytes not yet parsed into a request head, and request body bytes still to pass over. */
  requestText: string;
  skipBody: number;
  readonly pending: Buffer[];
  tokens: number;
  waitingDrain: boolean;
  active: boolean;
  closed: boolean;
}

const rangeOf = (value: string | undefined): RelayedRequest['range'] => {
  const match = /^bytes=(\d+)-(\d*)$/.exec(value?.trim() ?? '');
  if (match === null) return undefined;
  return { first: Number(match[1]), ...(match[2] !== '' ? { last: Number(match[2]) } : {}) };
};

/** Starts a relay to `127.0.0.1:<upstreamPort>`, at `bytesPerSecond` per connection (default: unlimited). */
export const startMeteredRelay = async (
  upstreamPort: number,
  options: { readonly bytesPerSecond?: number | null } = {},
): Promise<MeteredRelay> => {
  let rate = options.bytesPerSecond ?? null;
  const connections: Connection[] = [];
  const requests: RelayedRequest[] = [];
  let responding = 0;
  let total = 0;
  let peakActive = 0;
  let armed: { readonly cut: RelayCut; readonly done: (made: RelayCutMade) => void } | undefined;
  const waiters: Array<{ readonly bytes: number; readonly done: () => void }> = [];

  const close = (c: Connection): void => {
    c.closed = true;
    c.pending.length = 0;
    c.client.destroy();
    c.upstream.destroy();
  };

  const parseRequests = (c: Connection, chunk: Buffer): void => {
    c.requestText += chunk.toString('latin1');
    for (;;) {
      if (c.skipBody > 0) {
        const skipped = Math.min(c.skipBody, c.requestText.length);
        c.skipBody -= skipped;
        c.requestText = c.requestText.slice(skipped);
        if (c.skipBody > 0) return;
      }
      const end = c.requestText.indexOf('\r\n\r\n');
      if (end === -1) return;
      const [line = '', ...headerLines] = c.requestText.slice(0, end).split('\r\n');
      c.requestText = c.requestText.slice(end + 4);
      const headers = new Map(
        headerLines.map((header) => {
          const colon = header.indexOf(':');
          return [header.slice(0, colon).trim().toLowerCase(), header.slice(colon + 1).trim()] as const;
        }),
      );
      const [method = '', target = ''] = line.split(' ');
      const range = rangeOf(headers.get('range') ?? headers.get('x-ms-range'));
      const request: RelayedRequest = { connection: c.index, method, target, ...(range ? { range } : {}) };
      requests.push(request);
      c.requests += 1;
      c.lastRequest = request;
      // HTTP/1.1 without pipelining: the answer to this request is what comes back next.
      c.responseBytes = 0;
      c.headBytes = undefined;
      c.headScan = '';
      c.skipBody = Number(headers.get('content-length') ?? 0) || 0;
    }
  };

  /** How many more bytes `c` may relay before the armed cut, when it applies to `c`'s current response. */
  const cutRoom = (c: Connection): number | undefined => {
    if (armed === undefined) return undefined;
    const { cut } = armed;
    if (cut.connection !== undefined && c.responding !== cut.connection) return undefined;
    if (cut.request !== undefined && (c.lastRequest === undefined || !cut.request(c.lastRequest)))
      return undefined;
    return cut.afterBytes - c.responseBytes;
  };

  const count = (c: Connection, bytes: Buffer): void => {
    c.responding ??= ++responding;
    c.bytesToClient += bytes.length;
    c.responseBytes += bytes.length;
    c.active = true;
    total += bytes.length;
    if (c.headBytes === undefined && c.headScan.length < maxHeadScan) {
      // The scan holds the response's first bytes, from its start on.
      c.headScan += bytes.subarray(0, maxHeadScan).toString('latin1');
      const end = c.headScan.indexOf('\r\n\r\n');
      if (end !== -1) c.headBytes = end + 4;
    }
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (total >= waiters[i]!.bytes) waiters.splice(i, 1)[0]!.done();
    }
  };

  const makeCut = (c: Connection, last: Buffer): void => {
    const made: RelayCutMade = {
      connection: c.index,
      request: c.lastRequest,
      bodyBytes: c.responseBytes - (c.headBytes ?? c.responseBytes),
    };
    const { done } = armed!;
    armed = undefined;
    c.closed = true;
    c.pending.length = 0;
    c.client.write(last, () => {
      close(c);
      done(made);
    });
  };

  const flush = (c: Connection): void => {
    while (c.pending.length > 0 && !c.waitingDrain && !c.closed) {
      const chunk = c.pending[0]!;
      let take = chunk.length;
      if (rate !== null) {
        take = Math.min(take, Math.floor(c.tokens));
        if (take <= 0) return;
      }
      const room = cutRoom(c);
      if (room !== undefined) take = Math.max(0, Math.min(take, room));
      const slice = chunk.subarray(0, take);
      if (take === chunk.length) c.pending.shift();
      else c.pending[0] = chunk.subarray(take);
      c.tokens -= take;
      count(c, slice);
      if (room !== undefined && take >= room) {
        makeCut(c, slice);
        return;
      }
      if (!c.client.write(slice)) {
        c.waitingDrain = true;
        c.client.once('drain', () => {
          c.waitingDrain = false;
          flush(c);
        });
      }
    }
    if (c.pending.length === 0 && !c.closed) c.upstream.resume();
  };

  const ticker = setInterval(() => {
    let active = 0;
    for (const c of connections) {
      if (c.closed) continue;
      if (c.active) active += 1;
      c.active = false;
      if (rate !== null) {
        const perTick = (rate * tickMs) / 1000;
        c.tokens = Math.min(perTick * burstTicks, c.tokens + perTick);
      }
      flush(c);
    }
    peakActive = Math.max(peakActive, active);
  }, tickMs);
  ticker.unref();

  const server = createServer((client) => {
    const upstream = connect(upstreamPort, '127.0.0.1');
    const c: Connection = {
      index: connections.length + 1,
      client,
      upstream,
      bytesToClient: 0,
      requests: 0,
      responseBytes: 0,
      headScan: '',
      requestText: '',
      skipBody: 0,
      pending: [],
      tokens: 0,
      waitingDrain: false,
      active: false,
      closed: false,
    };
    connections.push(c);
    const end = (): void => close(c);
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => {
      parseRequests(c, chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      c.pending.push(chunk);
      upstream.pause();
      flush(c);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get bytesToClients() {
      return total;
    },
    requests,
    get connections() {
      return connections.map(({ index, bytesToClient, requests: sent }) => ({
        index,
        bytesToClient,
        requests: sent,
      }));
    },
    get peakActive() {
      return peakActive;
    },
    setRate: (bytesPerSecond) => {
      rate = bytesPerSecond;
      for (const c of connections) {
        c.tokens = 0;
        flush(c);
      }
    },
    cut: (cut) =>
      new Promise<RelayCutMade>((done) => {
        if (armed !== undefined) throw new Error('startMeteredRelay: one cut at a time');
        armed = { cut, done };
        for (const c of connections) flush(c);
      }),
    whenRelayed: (bytes) =>
      new Promise<void>((done) => {
        if (total >= bytes) done();
        else waiters.push({ bytes, done });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(ticker);
        for (const c of connections) close(c);
        server.close(() => resolve());
      }),
  };
};

/** For a test file: `relay(port, options)` starts a metered relay that is closed after its test. */
export const useMeteredRelays = (): typeof startMeteredRelay => {
  const open: MeteredRelay[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((relay) => relay.close()));
  });
  return async (port, options) => {
    const relay = await startMeteredRelay(port, options);
    open.push(relay);
    return relay;
  };
};
