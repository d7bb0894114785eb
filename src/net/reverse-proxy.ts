/**
 * reverseProxy: KServe's agent in Serverless mode, in Node — each request on the pod's port passed to the model
 * server on loopback (as Go's `httputil.NewSingleHostReverseProxy`) and its answer back, both bodies streamed with
 * backpressure over one pool of kept-alive upstream connections.
 *
 * Protocol upgrades (WebSocket …) and CONNECT are answered 501, by design: the model servers answer plain requests,
 * and a tunnel would hold two sockets past every bound. An `Upgrade: h2c` offer alone is ignored (RFC 9110 §7.8)
 * and its request proxied as HTTP/1.1, the connection closed after it. HTTP/2 is not in scope. A body in a transfer
 * coding other than chunked alone is refused both ways (501 to the client, 502 for the upstream's answer), as Go does.
 */
import {
  request as httpRequest,
  STATUS_CODES,
  type ClientRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Logger } from 'pino';
import { errorCode } from '../core/errors';
import { paceBody, type BodyPace } from './body-pace';
import { dropRestOfBody } from './early-answer';
import { oneAtATime } from './one-at-a-time';
import {
  answer,
  answerGlobalOptions,
  passInterim,
  rateLimitedWarn,
  refusalOf,
  slowBodyText,
  timeoutText,
  unreachableText,
  type FailureKind,
} from './proxy-answers';
import { sharedReadAgent } from './shared-read-agent';
import { holdSocket } from './socket-hold';
import {
  chunkedToClient,
  forwardable,
  framedByClose,
  originForm,
  otherCodings,
  pairs,
  sentTwiceSafely,
  upstreamHeaders,
  withoutLength,
  type Forwardable,
} from './proxy-headers';

/** Where and how requests are proxied. */
export interface ReverseProxyOptions {
  /** The upstream: always plain http on the pod's loopback. */
  readonly target: { readonly host: string; readonly port: number };
  /** Connections to the upstream at once (kept alive, reused); requests past it wait in the agent's queue. */
  readonly maxSockets: number;
  /**
   * No byte moving either way on one exchange for this long (queueing included): 504 before the upstream's head,
   * else a cut. It replaces the server's short idle timeout on the client's socket while the exchange lasts.
   */
  readonly timeoutMs: number;
  /** How fast a request body must come: one behind gets 408 (cut, once the upstream answers), its request aborted. */
  readonly body: BodyPace;
  readonly log: Logger;
  /** The clock of the once-a-second warn lines, in ms (default `performance.now`): a test steps its own. */
  readonly now?: () => number;
}

/** A running proxy. */
export interface ReverseProxy {
  readonly handle: (request: IncomingMessage, response: ServerResponse) => void;
  /** Requests being proxied now. */
  readonly inFlight: () => number;
  /** Destroys the upstream connections (on shutdown). */
  readonly close: () => void;
}

/** Under uvicorn's 5 s keep-alive (KServe's Python server): no request goes on a connection it is closing. */
const upstreamIdleMs = 4000;

/**
 * The most an answer's head may take: node:http's default is 16 KiB, Go's transport (KServe's agent) takes 10 MiB;
 * 64 KiB, as a request's head on the agent port (`agentPortLimits`), passes what a model server sends.
 */
const maxAnswerHeadBytes = 64 * 1024;

/** Pipelined requests one client connection may have waiting behind the one proxied (`oneAtATime`). */
const maxPipelinedWaiting = 16;

// What Node's writeHead refuses in a reason phrase (it throws): such a reason is replaced by the status's own, as
// Go's ReverseProxy always sends its own.
const badReasonCharacter = /[^\t\x20-\x7e\x80-\xff]/;

/** A reverse proxy to `options.target`; mount `handle` as (or inside) a server's request listener. */
export const reverseProxy = (options: ReverseProxyOptions): ReverseProxy => {
  const { target, timeoutMs, maxSockets } = options;
  // lifo: the warmest connection first, so that the others idle out rather than all staying half used.
  const agent = sharedReadAgent({ keepAlive: true, maxSockets, scheduling: 'lifo', timeout: upstreamIdleMs });
  const hostHeader = `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
  const warn = rateLimitedWarn(options.log, options.now);
  let inFlight = 0;

  const proxy = (request: IncomingMessage, response: ServerResponse, message: Forwardable): void => {
    // Node's parser reads nothing more on a connection after a request that offered an upgrade: close it after.
    const closeAfter = message.upgrade !== undefined;
    const bodiless = message.chunked !== true && Number(message.length ?? 0) === 0;
    const headers = upstreamHeaders(request, message, hostHeader);
    const replayable = bodiless && sentTwiceSafely(request);
    // 'left': the client went away (or its connection was closed) before the exchange was over.
    let phase: 'waiting' | 'streaming' | 'ended' | 'answered' | 'cut' | 'left' = 'waiting';
    let upstream: ClientRequest | undefined;
    let upstreamResponse: IncomingMessage | undefined;
    let retried = false;
    let holding = true;
    inFlight++;
    const release = holdSocket(request.socket);

    const letGo = (): void => {
      if (!holding) return;
      holding = false;
      clearTimeout(idle);
      release();
    };
    const answerOurselves = (status: number, text: Buffer): void => {
      phase = 'answered';
      letGo();
      if (upstream !== undefined) request.unpipe(upstream);
      answer(request, response, status, text, closeAfter || !request.complete);
    };
    let closeFramed = false; // the answer's body is framed by the close (framedByClose)
    const cut = (kind: FailureKind): void => {
      if (phase === 'cut') return;
      phase = 'cut';
      warn(kind);
      // The client sees a cut body, never a short one that looks complete: a length or chunks it lacks say so, and
      // where the close frames it, a reset (of a TCP socket still open: only those have a remote family).
      if (closeFramed && request.socket.remoteFamily !== undefined) request.socket.resetAndDestroy();
      response.destroy();
    };
    // Whether a byte moved since the idle timer last fired.
    let movedSince = false;
    const idle = setTimeout(() => {
      movedSince = false;
      // Judged after one turn through I/O: a timer late because this process did not run (a busy or paused host)
      // fires before the bytes that moved meanwhile are read, and would blame a peer for our stall.
      setImmediate(() => {
        if (movedSince || !holding || (phase !== 'waiting' && phase !== 'streaming')) return;
        if (phase === 'streaming') return cut('stalled');
        warn('timeout');
        upstream?.destroy();
        answerOurselves(504, timeoutText);
      });
    }, timeoutMs);
    const moved = (): void => {
      movedSince = true;
      idle.refresh();
    };

    const onHead = (head: IncomingMessage): void => {
      if (phase !== 'waiting') return void head.destroy();
      upstreamResponse = head;
      const status = head.statusCode ?? 502;
      const back = forwardable(head.rawHeaders, false);
      // A 204 has no body, and RFC 9110 §8.6 forbids it a Content-Length: dropped, as Go's server drops it.
      if (status === 204) withoutLength(back);
      if (otherCodings(back)) {
        head.destroy();
        warn('invalid-head');
        return answerOurselves(502, unreachableText);
      }
      if (back.trailer !== undefined && chunkedToClient(request, status, back))
        back.headers.push('Trailer', back.trailer);
      if (closeAfter) back.headers.push('Connection', 'close');
      const reason = head.statusMessage ?? '';
      try {
        const passed = badReasonCharacter.test(reason) ? (STATUS_CODES[status] ?? '') : reason;
        response.writeHead(status, passed, back.headers);
      } catch (error) {
        // A status below 100 gets past the parser, not past writeHead: a head that cannot be passed on.
        head.destroy();
        warn('invalid-head', error);
        return answerOurselves(502, unreachableText);
      }
      phase = 'streaming';
      closeFramed = framedByClose(request, status, back);
      idle.refresh();
      head.on('data', moved);
      head.on('end', () => {
        if (phase !== 'streaming') return;
        phase = 'ended';
        // The client's socket stays held until the answer is written out (the response's 'close'): a client slow
        // to read the last of a big answer must not meet the server's short idle timeout meanwhile.
        clearTimeout(idle);
        if (head.rawTrailers.length > 0) response.addTrailers(pairs(head.rawTrailers));
      });
      head.on('close', () => {
        if (!head.complete && phase === 'streaming') cut('cut');
      });
      head.pipe(response);
    };
    const onUpstreamError = (error: Error): void => {
      // Node completes an answer framed by the close when its connection fails (a reset): it was cut, not ended.
      if (phase === 'streaming' && upstreamResponse?.complete !== true) return cut('cut');
      if (phase !== 'waiting') return; // past the head, the answer's own 'close' says how it ended
      // A kept-alive connection the upstream closed as it was reused: sent again once, as Go does, when there is
      // no body (one with a body was read, and cannot be sent twice) and sending it twice does no harm.
      if (replayable && !retried && upstream?.reusedSocket === true && errorCode(error) === 'ECONNRESET') {
        retried = true;
        options.log.debug({ err: error }, 'kept-alive connection closed by the model server; sending again');
        return send();
      }
      warn('unreachable', error);
      answerOurselves(502, unreachableText);
    };
    /** Closed with neither an answer nor an error: how Node drops a 101 nobody asked for. */
    const onUpstreamClose = function (this: ClientRequest): void {
      if (this !== upstream || phase !== 'waiting') return; // a retried attempt, or answered
      warn('invalid-head');
      answerOurselves(502, unreachableText);
    };
    const send = (): void => {
      const { method, url = '/' } = request;
      // Go's server takes a target in absolute form apart, and its proxy sends the path on (origin form): a model
      // server that reads the target whole (uvicorn's path) would not find `http://host/v2/...`.
      const path = originForm(url)?.path ?? url;
      const sent = httpRequest({
        agent,
        host: target.host,
        port: target.port,
        method,
        path,
        headers,
        maxHeaderSize: maxAnswerHeadBytes,
      });
      // Node keeps the first 1,000 header lines of an answer and drops the rest unseen (a Connection list, a coding
      // among them): every line is read, as Go's transport reads them, the head's size bounding their count.
      sent.maxHeadersCount = 0;
      upstream = sent;
      sent.on('response', onHead).on('error', onUpstreamError).on('close', onUpstreamClose);
      sent.on('information', (interim) => {
        if (phase !== 'waiting') return;
        moved(); // a 102 is how a server says it still works on a long request
        passInterim(request, response, interim);
      });
      if (bodiless) return void sent.end();
      request.on('data', moved);
      if (message.chunked === true)
        request.once('end', () => {
          if (request.rawTrailers.length > 0) sent.addTrailers(pairs(request.rawTrailers));
        });
      request.pipe(sent);
    };

    const stopPacing = bodiless
      ? () => undefined
      : paceBody(request, options.body, () => {
          if (phase !== 'waiting') return phase === 'answered' ? undefined : cut('slow-body');
          warn('slow-body');
          upstream?.destroy();
          answerOurselves(408, slowBodyText);
        });

    response.once('close', () => {
      inFlight--;
      stopPacing();
      letGo();
      if (upstreamResponse?.complete === true && request.complete) return;
      // The client went away, or was cut, before the exchange was over: the upstream is stopped at once, and what
      // that stop makes of it (a hang-up, a cut answer) is nobody's failure upstream. Or the upstream answered
      // before it read the whole body: the rest is dropped (within bounds), so that the next request is parsed.
      if (phase === 'waiting' || phase === 'streaming') {
        phase = 'left';
        options.log.debug('the client went away before the exchange was over');
      }
      upstream?.destroy();
      dropRestOfBody(request);
    });
    try {
      send();
    } catch (error) {
      // http.request refuses a path or header value the server's parser let through (characters beyond latin1).
      warn('invalid-head', error);
      answerOurselves(502, unreachableText);
    }
  };

  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    if (response.destroyed || response.writableEnded) return;
    if (request.method === 'OPTIONS' && request.url === '*') return answerGlobalOptions(request, response);
    const message = forwardable(request.rawHeaders, true);
    const refusal = refusalOf(request, message);
    if (refusal === undefined) return proxy(request, response, message);
    warn('refused');
    answer(request, response, refusal.status, refusal.text, true);
  };

  return {
    handle: oneAtATime(handle, maxPipelinedWaiting, () => warn('pipelined')),
    inFlight: () => inFlight,
    close: () => agent.destroy(),
  };
};
