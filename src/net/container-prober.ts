/** containerProber: the user container's readiness probes (httpGet, tcpSocket), run as KServe's agent runs them. */
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ContainerProbe, ProbeAction } from '../core/container-probe';
import { lazyModule } from '../core/lazy-module';

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded at the first https probe (lazy-module.ts) */
const nodeHttps = lazyModule(() => require('node:https') as typeof import('node:https'));

/** Knative's aggressive probing: an attempt every 50 ms, each at most 100 ms, for at most 10 s. */
export const aggressiveProbing = { intervalMs: 50, attemptTimeoutMs: 100, windowMs: 10_000 } as const;

/** The User-Agent of the probe requests: the kubelet's prefix, which servers exempt from auth and logging. */
const probeUserAgent = 'kube-probe/modelsync';

/** A body beyond this is not read: a probe's answer is its status. */
const maxProbeBodyBytes = 64 * 1024;

/**
 * The most an answer's head may take: node:http's default, 16 KiB, failed a container whose readiness answer carries
 * a big cookie or trace header, which Knative's prober (Go's transport, 10 MiB) passes. 1 MiB takes any real head
 * and still bounds what one attempt holds.
 */
const maxProbeHeadBytes = 1024 * 1024;

/**
 * `path` as Go's url.URL sends it (the kubelet, Knative's prober in KServe's agent): every character past ASCII as its
 * UTF-8 bytes, percent-encoded. node:http refuses one past Latin-1 and sends one within it as a single byte.
 */
const wirePath = (path: string): string =>
  path.replace(/[^\p{ASCII}]+/gu, (text) =>
    [...Buffer.from(text)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join(''),
  );

/** Where one request of a probe goes. */
interface Target {
  readonly https: boolean;
  readonly host: string;
  readonly port: number;
  readonly path: string;
}

/**
 * Redirects are followed as Go's http.Client follows them for a GET (Knative's prober in KServe's agent): at most 10,
 * the last answer decides; a 3xx with nothing to follow passes.
 */
const redirectStatuses: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
const maxRedirects = 10;
/** Headers Go's client does not send on to another host. */
const sensitiveHeaders = new Set(['authorization', 'www-authenticate', 'cookie', 'cookie2']);

/** Where `location`, answered to a request to `from`, leads; undefined when it is no http(s) URL. */
const redirectTarget = (from: Target, location: string): Target | undefined => {
  const host = from.host.includes(':') ? `[${from.host}]` : from.host;
  const base = URL.parse(`${from.https ? 'https' : 'http'}://${host}:${from.port}${from.path}`);
  const next = base === null ? null : URL.parse(location, base.href);
  if (next === null || (next.protocol !== 'http:' && next.protocol !== 'https:')) return undefined;
  const https = next.protocol === 'https:';
  const port = next.port === '' ? (https ? 443 : 80) : Number(next.port);
  return { https, host: next.hostname.replace(/^\[|\]$/g, ''), port, path: `${next.pathname}${next.search}` };
};

/** The headers of a redirected request: the Host given goes (the URL names the host), credentials stay behind. */
const redirectHeaders = (
  sent: Readonly<Record<string, string>>,
  from: Target,
  to: Target,
): Record<string, string> =>
  Object.fromEntries(
    Object.entries(sent).filter(
      ([name]) => name !== 'host' && (to.host === from.host || !sensitiveHeaders.has(name)),
    ),
  );

/** One attempt of `action` within `timeoutMs`: true when it passed. Never throws; leaves no timer or socket. */
export const attemptProbe = (action: ProbeAction, timeoutMs: number): Promise<boolean> =>
  new Promise<boolean>((resolve) => {
    let settled = false;
    const finish = (passed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cleanup();
      resolve(passed);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    let cleanup: () => void = () => undefined;
    if (action.kind === 'tcp') {
      const socket = connect({ host: action.host, port: action.port });
      cleanup = () => socket.destroy();
      socket.once('connect', () => finish(true));
      socket.once('error', () => finish(false));
      return;
    }
    const headers: Record<string, string> = { 'user-agent': probeUserAgent, accept: '*/*' };
    // The probe's own headers win, as the kubelet lets them (a Host or User-Agent of the user's choosing).
    for (const [name, value] of action.headers) headers[name.toLowerCase()] = value;
    let current: ClientRequest | undefined;
    const get = (target: Target, sent: Readonly<Record<string, string>>, redirectsLeft: number): void => {
      const send = target.https ? nodeHttps().request : httpRequest;
      let call: ClientRequest;
      try {
        call = send({
          host: target.host,
          port: target.port,
          path: target.path,
          method: 'GET',
          headers: sent,
          agent: false,
          maxHeaderSize: maxProbeHeadBytes,
          // The kubelet does not check a probed container's certificate either.
          ...(target.https ? { rejectUnauthorized: false } : {}),
        });
      } catch {
        // A probe node:http refuses at once (a host no Host header can carry) fails, never throws.
        return finish(false);
      }
      current = call;
      call.once('error', () => call === current && finish(false));
      call.once('response', (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        const { location } = response.headers;
        if (redirectStatuses.has(status) && location !== undefined) {
          response.on('error', () => undefined).resume();
          call.destroy();
          // Past 10 redirects, or to a URL Go's client cannot follow, the probe fails as it does there.
          const next = redirectsLeft > 0 ? redirectTarget(target, location) : undefined;
          return next === undefined
            ? finish(false)
            : get(next, redirectHeaders(sent, target, next), redirectsLeft - 1);
        }
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > maxProbeBodyBytes) finish(status >= 200 && status < 400);
        });
        response.once('end', () => finish(status >= 200 && status < 400));
        response.once('error', () => finish(false));
      });
      call.end();
    };
    cleanup = () => current?.destroy();
    const first = { https: action.scheme === 'https', host: action.host, port: action.port };
    get({ ...first, path: wirePath(action.path) }, headers, maxRedirects);
  });

/** Knative's aggressive probing of one probe: `successThreshold` passes in a row within the window. */
const pollAggressively = async (probe: ContainerProbe, signal: AbortSignal): Promise<boolean> => {
  const deadline = performance.now() + aggressiveProbing.windowMs;
  let inARow = 0;
  while (!signal.aborted) {
    inARow = (await attemptProbe(probe.action, aggressiveProbing.attemptTimeoutMs)) ? inARow + 1 : 0;
    if (inARow >= probe.successThreshold) return true;
    if (performance.now() + aggressiveProbing.intervalMs > deadline) return false;
    await sleep(aggressiveProbing.intervalMs, undefined, { signal }).catch(() => undefined); // aborted: stop
  }
  return false;
};

/** The user container's readiness, checked on demand. */
export interface ContainerProber {
  /** Runs every probe once (or polls, for a probe with no period): true when all pass. Never throws. */
  readonly check: () => Promise<boolean>;
  /** Stops a poll in progress (shutdown). */
  readonly close: () => void;
}

/**
 * A prober of `probes`, every one of which must pass; concurrent checks share the one in flight. A periodic probe
 * passes once `successThreshold` came in a row across checks; a failure answers false at once (the kubelet's own
 * threshold on the agent's probe decides when the pod leaves the endpoints, as with KServe's agent).
 */
export const containerProber = (probes: ReadonlyArray<ContainerProbe>): ContainerProber => {
  const stop = new AbortController();
  const inARow = probes.map(() => 0);
  let inFlight: Promise<boolean> | undefined;
  const runOnce = async (): Promise<boolean> => {
    const results = await Promise.all(
      probes.map(async (probe, index) => {
        if (probe.periodSeconds === 0) return pollAggressively(probe, stop.signal);
        const passes = (await attemptProbe(probe.action, probe.timeoutMs)) ? (inARow[index] ?? 0) + 1 : 0;
        inARow[index] = passes;
        return passes >= probe.successThreshold;
      }),
    );
    return results.every(Boolean);
  };
  return {
    check: () => {
      inFlight ??= runOnce().finally(() => (inFlight = undefined));
      return inFlight;
    },
    close: () => stop.abort(),
  };
};
