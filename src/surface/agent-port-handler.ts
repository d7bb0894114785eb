/**
 * KServe's agent port (the HTTP surface with `--component-port`): a kubelet's request, on whatever path, is KServe's
 * readiness check (Knative's `health.ProbeHandler`: the user container's probe, and modelsync ready); a Knative
 * network probe is answered; the rest, not to the surface's own paths (`http-surface.ts`), goes to the proxy.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { bodyUnread, endAnswer, headerOf, holdSocket } from '../net';

/** What a request to the agent port is, from its headers alone (Knative's `Drainer` and `ProbeHandler`). */
export type AgentPortRequest =
  | { readonly kind: 'readiness' }
  | { readonly kind: 'bad-probe-header'; readonly value: string }
  | { readonly kind: 'network-probe'; readonly hash: string | undefined }
  | { readonly kind: 'proxy' };

/** The header value of a probe, and the one Knative's queue and KServe's agent answer. */
export const queueProbeValue = 'queue';

/**
 * The kubelet's probes (`kube-probe/<version>`, or Knative's `K-Kubelet-Probe` header) and the activator's are
 * health checks on any path; `K-Network-Probe: probe` is Knative's network probe; the rest is proxied.
 */
export const classifyAgentPortRequest = (headers: IncomingHttpHeaders): AgentPortRequest => {
  const userAgent = headerOf(headers, 'user-agent') ?? '';
  const networkProbe = headerOf(headers, 'k-network-probe') ?? '';
  const kubelet =
    userAgent.startsWith('kube-probe/') ||
    (headerOf(headers, 'k-kubelet-probe') ?? '') !== '' ||
    userAgent.startsWith('Knative-Activator-Probe');
  if (kubelet)
    return networkProbe === queueProbeValue
      ? { kind: 'readiness' }
      : { kind: 'bad-probe-header', value: networkProbe };
  if (networkProbe === 'probe') return { kind: 'network-probe', hash: headerOf(headers, 'k-network-hash') };
  return { kind: 'proxy' };
};

/** What the agent port needs: whether modelsync is ready, the user container's probe, and the proxy. */
export interface AgentPortOptions {
  /** modelsync applied its first config and is not shutting down. */
  readonly ready: () => boolean;
  /** Shutting down: readiness checks answer 503 `shutting down`, as Knative's drainer does. */
  readonly draining: () => boolean;
  /** The user container's readiness probe (never throws). */
  readonly probe: () => Promise<boolean>;
  /** The longest `probe` takes (Knative's aggressive window, or the probe's timeout): the wait is held that long. */
  readonly probeWithinMs: number;
  /** Hands a request to the model server. */
  readonly proxy: (request: IncomingMessage, response: ServerResponse) => void;
}

/** A value echoed into a body: printable and short, whatever the client sent. */
const shown = (value: string): string => value.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);

/** The handler of every request to the agent port that is not one of the surface's own paths. */
export const agentPortHandler =
  ({ ready, draining, probe, probeWithinMs, proxy }: AgentPortOptions) =>
  (request: IncomingMessage, response: ServerResponse): void => {
    const kind = classifyAgentPortRequest(request.headers);
    if (kind.kind === 'proxy') return proxy(request, response);
    /** Answers `status` with `body`; a request body is not read (a probe has none): the connection closes after. */
    const text = (status: number, body: string, headers: Record<string, string> = {}): void => {
      response.writeHead(status, {
        ...headers,
        'content-type': 'text/plain; charset=utf-8',
        'x-content-type-options': 'nosniff',
        'content-length': Buffer.byteLength(body),
        'cache-control': 'no-store',
        ...(bodyUnread(request) ? { connection: 'close' } : {}),
      });
      endAnswer(request, response, body);
    };
    if (kind.kind === 'bad-probe-header')
      return text(400, `unexpected probe header value: ${shown(kind.value)}\n`);
    if (draining()) return text(503, 'shutting down\n');
    if (kind.kind === 'network-probe') {
      if (kind.hash === undefined || kind.hash === '')
        return text(400, 'a probe request must contain a non-empty "K-Network-Hash" header\n');
      return text(200, '', { 'k-network-hash': shown(kind.hash) });
    }
    if (!ready()) return text(503, '');
    // The server's idle timeout must not cut a check that waits for the probe; the probe's own window bounds it. The
    // socket is held, not its timeout set and put back: a proxied request pipelined beside the check may be waiting.
    const release = holdSocket(request.socket);
    const bound = setTimeout(() => response.destroy(), probeWithinMs + 1000).unref();
    void probe().then((passed) => {
      clearTimeout(bound);
      release();
      if (response.destroyed) return;
      if (draining()) return text(503, 'shutting down\n');
      text(passed ? 200 : 503, passed ? queueProbeValue : '');
    });
  };
