/**
 * KServe's agent port, wired: with `--component-port`, the surface's port answers KServe's readiness check from
 * `SERVING_READINESS_PROBE` and proxies the rest to the model server (which is which: `surface/agent-port-handler.ts`).
 */
import type { RequestListener } from 'node:http';
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import {
  componentPortProbe,
  decodeReadinessProbes,
  probeLocalHost,
  type ContainerProbe,
} from '../core/container-probe';
import type { Env } from '../core/env';
import type { AppConfig } from '../core/flags/app-config';
import { aggressiveProbing, containerProber, reverseProxy, type BodyPace, type ServerLimits } from '../net';
import { agentPortHandler } from '../surface';

/** What the agent port is given at start: the model server's port, the user container's probes, the proxy's bounds. */
export interface AgentPortSettings {
  readonly componentPort: number;
  readonly probes: ReadonlyArray<ContainerProbe>;
  /** Where the probes come from, for the start-up line. */
  readonly probesFrom: 'SERVING_READINESS_PROBE' | 'the component port';
  readonly timeoutMs: number;
  /** How fast a proxied request body must come (`--proxy-body-timeout`, `--proxy-body-min-rate`). */
  readonly body: BodyPace;
  readonly maxConnections: number;
}

/**
 * The agent port `config` and `env` ask for: none without `--component-port`; the Left says what is wrong with
 * `SERVING_READINESS_PROBE`, without which (KServe's agent exits) the model server's port must take a connection.
 */
export const agentPortSettings = (
  config: AppConfig,
  env: Env,
): E.Either<string, AgentPortSettings | undefined> => {
  const { componentPort } = config;
  if (componentPort === undefined) return E.right(undefined);
  const decoded = decodeReadinessProbes(env.SERVING_READINESS_PROBE ?? '', componentPort);
  if (E.isLeft(decoded)) return E.left(`invalid SERVING_READINESS_PROBE: ${decoded.left}`);
  const given = decoded.right.length > 0;
  return E.right({
    componentPort,
    probes: given ? decoded.right : [componentPortProbe(componentPort)],
    probesFrom: given ? 'SERVING_READINESS_PROBE' : 'the component port',
    timeoutMs: config.proxyTimeout,
    body: { stallMs: config.proxyBodyTimeout, minRate: config.proxyBodyMinRate },
    maxConnections: config.proxyMaxConnections,
  });
};

/**
 * The server bounds of the agent port: the surface's, with room for a proxy's crowd and heads (Go's servers take
 * 1 MiB of headers; 64 KiB covers tokens and cookies) and time for a request body to stream in.
 */
export const agentPortLimits = <L extends ServerLimits>(limits: L, settings: AgentPortSettings): L => ({
  ...limits,
  maxConnections: settings.maxConnections,
  maxHeaderBytes: 64 * 1024,
  maxHeadersCount: 256,
  bodyTimeoutMs: settings.timeoutMs,
});

/** The agent port's handler and how to stop what it holds (the prober's poll, the upstream connections). */
export interface AgentPort {
  readonly listener: RequestListener;
  /** Resolves once no request was proxied for `proxyQuietMs`: queue-proxy sends on while it drains (as Knative). */
  readonly quiet: () => Promise<void>;
  readonly close: () => void;
}

/** How long the proxy must have had no request before a shutdown closes it (capped by `--shutdown-timeout`). */
export const proxyQuietMs = 5000;

/** The agent port's handler: ready when modelsync is and the probes pass; the rest proxied to the model server. */
export const agentPort = (
  settings: AgentPortSettings,
  state: { readonly ready: () => boolean; readonly draining: () => boolean },
  log: Logger,
): AgentPort => {
  const prober = containerProber(settings.probes);
  const proxy = reverseProxy({
    target: { host: probeLocalHost, port: settings.componentPort },
    maxSockets: settings.maxConnections,
    timeoutMs: settings.timeoutMs,
    body: settings.body,
    log,
  });
  log.info(
    {
      componentPort: settings.componentPort,
      readinessFrom: settings.probesFrom,
      probes: settings.probes.map(({ action }) =>
        action.kind === 'http'
          ? `httpGet ${action.scheme}://${action.host}:${action.port}${action.path}`
          : `tcpSocket ${action.host}:${action.port}`,
      ),
    },
    "KServe's agent port: readiness checks and a reverse proxy to the model server",
  );
  let lastProxiedAt = -Infinity; // never proxied: quiet
  const quietFor = (): number => (proxy.inFlight() > 0 ? 0 : performance.now() - lastProxiedAt);
  return {
    listener: agentPortHandler({
      ...state,
      probe: prober.check,
      probeWithinMs: Math.max(
        ...settings.probes.map((probe) =>
          probe.periodSeconds === 0
            ? aggressiveProbing.windowMs + aggressiveProbing.attemptTimeoutMs
            : probe.timeoutMs,
        ),
      ),
      proxy: (request, response) => {
        lastProxiedAt = performance.now();
        proxy.handle(request, response);
      },
    }),
    quiet: async () => {
      while (quietFor() < proxyQuietMs)
        await new Promise((resolve) => setTimeout(resolve, Math.min(100, proxyQuietMs - quietFor() || 100)));
    },
    close: () => {
      prober.close();
      proxy.close();
    },
  };
};
