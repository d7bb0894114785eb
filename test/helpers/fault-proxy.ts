/**
 * A reverse proxy in front of a storage server (s3rver, azurite, ...) that records every request and injects
 * faults on the way: an answer it makes up, a response body cut after some bytes. Clients get its URL as their
 * endpoint.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { startHttpServer } from '../../src/testing/http-server';

/** One request the proxy saw, as the client sent it. */
export interface ProxiedRequest {
  readonly method: string;
  /** Path and query (`/models/m1/a.bin?x-id=GetObject`), also of a request sent in absolute form. */
  readonly url: string;
  /** True for a request in absolute form (`GET http://host/path`): it came as to a forward proxy. */
  readonly absolute: boolean;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** What the proxy did: `forwarded`, `answered` (a made-up answer) or `cut` (the body broken off). */
  outcome: 'forwarded' | 'answered' | 'cut';
}

/** Decides, per request, whether to interfere; the first rule that matches (and has uses left) applies. */
export type FaultRule = {
  /** Which requests it applies to. */
  readonly when: (request: IncomingMessage) => boolean;
  /** How many requests it applies to (default 1). */
  times?: number;
} & (
  | {
      /** Answers instead of the server: status, headers and body. */
      readonly answer: (request: IncomingMessage) => {
        readonly status: number;
        readonly headers?: Readonly<Record<string, string>>;
        readonly body?: string;
      };
    }
  | {
      /** Forwards, then breaks the connection once this many body bytes have reached the client. */
      readonly cutAfter: number;
      /** Run when the cut point is reached, and awaited before the connection breaks (e.g. to change the object). */
      readonly onCut?: () => unknown;
    }
);

/** A running fault proxy. */
export interface FaultProxy {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Every request so far, in order. */
  readonly requests: ReadonlyArray<ProxiedRequest>;
  /** Adds a rule; rules are tried in the order they were added. */
  inject(rule: FaultRule): void;
  /** Removes every rule and forgets the requests. */
  reset(): void;
  close(): Promise<void>;
}

/** The path and query of `request`, whether it came in origin form (`/a?b`) or absolute form (`http://h/a?b`). */
const pathOf = (request: IncomingMessage): string => {
  const raw = request.url ?? '/';
  if (raw.startsWith('/')) return raw;
  const url = new URL(raw);
  return `${url.pathname}${url.search}`;
};

/** Forwards `request` to `target`, piping the answer to `response`; with `cutAfter`, breaks it off after that many body bytes. */
const forward = (
  target: URL,
  request: IncomingMessage,
  response: ServerResponse,
  cut?: { readonly after: number; readonly onCut?: () => unknown },
): void => {
  const upstream = httpRequest(
    {
      host: target.hostname,
      port: target.port,
      method: request.method,
      path: pathOf(request),
      headers: request.headers,
    },
    (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      if (cut === undefined) {
        answer.pipe(response);
        return;
      }
      let sent = 0;
      answer.on('data', (chunk: Buffer) => {
        if (sent >= cut.after) return;
        const part = chunk.subarray(0, cut.after - sent);
        sent += part.length;
        response.write(part, () => {
          if (sent < cut.after) return;
          // The connection breaks once onCut is done: a resume can never overtake the change it makes.
          void Promise.resolve(cut.onCut?.()).finally(() => {
            answer.destroy();
            response.socket?.destroy();
          });
        });
      });
      answer.on('end', () => response.end());
    },
  );
  upstream.on('error', () => response.socket?.destroy());
  // A client gone before the answer ended: the upstream's answer is dropped. Left piped to a closed response it
  // stays paused with its bytes unread, its socket open (and the jest worker alive) after the server is gone.
  let answered = false;
  upstream.once('response', (answer) => answer.once('end', () => (answered = true)));
  response.once('close', () => answered || upstream.destroy());
  request.pipe(upstream);
};

/** Starts a proxy on 127.0.0.1 that forwards everything to `target` (`http://127.0.0.1:<port>`) until told otherwise. */
export const startFaultProxy = async (target: string): Promise<FaultProxy> => {
  const to = new URL(target);
  const requests: ProxiedRequest[] = [];
  const rules: FaultRule[] = [];
  const server = await startHttpServer((request, response) => {
    const seen: ProxiedRequest = {
      method: request.method ?? 'GET',
      url: pathOf(request),
      absolute: /^[a-z][a-z\d+.-]*:\/\//i.test(request.url ?? ''),
      headers: { ...request.headers },
      outcome: 'forwarded',
    };
    requests.push(seen);
    const rule = rules.find((candidate) => (candidate.times ?? 1) > 0 && candidate.when(request));
    if (rule !== undefined) rule.times = (rule.times ?? 1) - 1;
    if (rule !== undefined && 'answer' in rule) {
      seen.outcome = 'answered';
      const { status, headers, body } = rule.answer(request);
      request.resume();
      response.writeHead(status, headers).end(body);
      return;
    }
    if (rule !== undefined) seen.outcome = 'cut';
    forward(
      to,
      request,
      response,
      rule === undefined ? undefined : { after: rule.cutAfter, onCut: rule.onCut },
    );
  });
  return {
    url: server.url,
    port: server.port,
    requests,
    inject: (rule) => void rules.push(rule),
    reset: () => {
      rules.length = 0;
      requests.length = 0;
    },
    close: server.close,
  };
};
