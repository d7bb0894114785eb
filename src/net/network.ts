/** Network: the one place that builds HTTP connections — undici dispatchers and node:http(s) agents with one proxy rule, one CA set, keep-alive. */
import type { Env } from '../core/env';
import { X509Certificate } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import * as http from 'node:http';
import type * as https from 'node:https';
import type { AgentConnectOpts } from 'agent-base';
import * as E from 'fp-ts/Either';
import { Agent, ProxyAgent, type Dispatcher } from './undici-core';
import { entryKind } from '../core/entry-kind';
import { errorCode, errorMessage } from '../core/errors';
import { lazyModule } from '../core/lazy-module';
import { proxyRules, proxySettingsFrom, type ProxyRules, type ProxySettings } from './proxy-rules';

/** How servers' certificates are checked. */
export interface TlsSettings {
  /** PEM certificates trusted on top of the process's default CAs (`--ca-bundle`, S3's `AWS_CA_BUNDLE`). */
  readonly extraCa?: ReadonlyArray<string>;
  /** false accepts any certificate (S3's `S3_VERIFY_SSL=0`); default true. */
  readonly verify?: boolean;
}

/** The two things that decide where a connection goes and whom it trusts: read once, from the environment. */
export interface NetworkOptions {
  /** The proxy variables (`proxySettingsFrom(env)`); absent: every request goes direct. */
  readonly proxy?: ProxySettings;
  readonly tls?: TlsSettings;
}

/**
 * Every connection modelsync makes goes through one Network: one proxy choice (HTTP(S)_PROXY, NO_PROXY), one set
 * of trusted CAs, pooled keep-alive connections, for undici clients and SDKs that want node:http agents alike.
 * `http://` targets go to a proxy as absolute-URI requests, `https://` ones through a CONNECT tunnel (curl's way).
 */
export interface Network {
  /** The undici dispatcher for a request to `url`: direct (a keep-alive pool per origin), or through its proxy. */
  dispatcherFor(url: URL): Dispatcher;
  /** The undici dispatcher that never uses a proxy (the model server is the pod's neighbour). */
  readonly direct: Dispatcher;
  /** The proxy a request to `url` goes through, or undefined (for SDKs that only take a proxy setting). */
  proxyFor(url: URL): URL | undefined;
  /** The node:http(s) agent for a request to `url` (for SDKs that pick an agent per request: Azure, GCS). */
  agentFor(url: URL): http.Agent;
  /** One agent that picks direct or proxy per request: for SDKs that take one agent per protocol (AWS). */
  readonly agent: https.Agent;
  /** The same proxy rules with `tls`'s CAs added and its `verify` (S3's `AWS_CA_BUNDLE`, `S3_VERIFY_SSL`); pools of its own. */
  withTls(tls: TlsSettings): Network;
  /** Closes every pooled connection of this Network (not of those made by withTls). */
  close(): Promise<void>;
}

type TlsOptions = { readonly ca?: string[]; readonly rejectUnauthorized: boolean };

/**
 * node:https, node:tls and the proxy agents, loaded at the first node:http(s) agent an SDK asks for or the first CA
 * added (lazy-module.ts): only the cloud SDKs take node agents (undici loads TLS itself, at its first https
 * connection). Loaded at start they cost an agent that serves http storage and a plain model server ~3.5 MiB of RSS
 * for nothing (`npm run bench -- idle-restart`).
 */
/* eslint-disable @typescript-eslint/no-require-imports -- loaded at first use (above) */
const nodeTls = lazyModule(() => {
  const { Agent: RoutingBase } = require('agent-base') as typeof import('agent-base');
  const { HttpsProxyAgent } = require('https-proxy-agent') as typeof import('https-proxy-agent');

  /** Decides per request, with agent-base, which of the Network's agents carries it. */
  class RoutingAgent extends RoutingBase {
    constructor(private readonly pick: (url: URL) => http.Agent) {
      super({ keepAlive: true });
    }

    override connect(_req: http.ClientRequest, options: AgentConnectOpts): http.Agent {
      const host = options.host ?? 'localhost';
      const shownHost = host.includes(':') ? `[${host}]` : host;
      const protocol = options.secureEndpoint ? 'https:' : 'http:';
      return this.pick(new URL(`${protocol}//${shownHost}${options.port ? `:${options.port}` : ''}`));
    }
  }

  /**
   * https-proxy-agent applies its options to the connection to the proxy only; the TLS session with the target
   * inside the tunnel gets the request's options, so the Network's CAs are added to those.
   */
  class TunnelAgent extends HttpsProxyAgent<string> {
    constructor(
      proxy: URL,
      private readonly tls: TlsOptions,
    ) {
      super(proxy, { keepAlive: true, ...tls });
    }

    override connect(req: http.ClientRequest, options: AgentConnectOpts) {
      return super.connect(req, { ...options, ...this.tls });
    }
  }

  return {
    https: require('node:https') as typeof import('node:https'),
    tls: require('node:tls') as typeof import('node:tls'),
    HttpProxyAgent: (require('http-proxy-agent') as typeof import('http-proxy-agent')).HttpProxyAgent,
    RoutingAgent,
    TunnelAgent,
  };
});
/* eslint-enable @typescript-eslint/no-require-imports */

/** A PEM certificate's base64 body, whitespace dropped: the same certificate, however the file wrapped it. */
const pemBody = (pem: string): string => pem.replace(/-----[A-Z ]+-----|\s+/g, '');

/**
 * `ca` for the process's default CAs (Node's roots, NODE_EXTRA_CA_CERTS, the system store under --use-system-ca) and
 * `extraCa` on top (a `ca` of Node's roots alone dropped the CAs a user had trusted by those); none when `extraCa`
 * adds nothing to them (a bundle of the system's roots, as SSL_CERT_FILE often is): they cost the heap ~0.6 MiB.
 */
const caOption = (extraCa: ReadonlyArray<string> = []): { readonly ca?: string[] } => {
  if (extraCa.length === 0) return {};
  const defaults = nodeTls().tls.getCACertificates('default');
  const known = new Set(defaults.map(pemBody));
  const added = extraCa.filter((pem) => !known.has(pemBody(pem)));
  return added.length === 0 ? {} : { ca: [...defaults, ...added] };
};

const buildNetwork = (rules: ProxyRules, tlsSettings: TlsSettings): Network => {
  const tls: TlsOptions = {
    ...caOption(tlsSettings.extraCa),
    rejectUnauthorized: tlsSettings.verify !== false,
  };
  const direct = new Agent({ connect: tls });
  const undiciProxies = new Map<string, ProxyAgent>();
  const httpDirect = new http.Agent({ keepAlive: true });
  // The node agents are made at their first use (nodeTls); `nodeAgents` holds those made, for close().
  const nodeAgents: http.Agent[] = [httpDirect];
  const made = <T extends http.Agent>(agent: T): T => {
    nodeAgents.push(agent);
    return agent;
  };
  const httpsDirect = lazyModule(() => made(new (nodeTls().https.Agent)({ keepAlive: true, ...tls })));
  const nodeProxies = new Map<string, http.Agent>();

  const dispatcherFor = (url: URL): Dispatcher => {
    const proxy = rules.proxyFor(url);
    if (proxy === undefined) return direct;
    // proxyTunnel false: http:// targets are forwarded as absolute-URI requests, like curl and the node agents.
    const agent =
      undiciProxies.get(proxy.href) ??
      new ProxyAgent({ uri: proxy.href, proxyTunnel: false, requestTls: tls, proxyTls: tls });
    undiciProxies.set(proxy.href, agent);
    return agent;
  };

  const agentFor = (url: URL): http.Agent => {
    const secure = url.protocol === 'https:';
    const proxy = rules.proxyFor(url);
    if (proxy === undefined) return secure ? httpsDirect() : httpDirect;
    const key = `${secure ? 'tunnel' : 'forward'} ${proxy.href}`;
    const { TunnelAgent, HttpProxyAgent } = nodeTls();
    const agent =
      nodeProxies.get(key) ??
      made(secure ? new TunnelAgent(proxy, tls) : new HttpProxyAgent(proxy, { keepAlive: true, ...tls }));
    nodeProxies.set(key, agent);
    return agent;
  };

  // agent-base's Agent is an http.Agent that serves https requests too; AWS's types ask for an https.Agent.
  const routing = lazyModule(() => made(new (nodeTls().RoutingAgent)(agentFor)) as unknown as https.Agent);

  return {
    dispatcherFor,
    direct,
    proxyFor: (url) => rules.proxyFor(url),
    agentFor,
    get agent() {
      return routing();
    },
    withTls: (other) =>
      buildNetwork(rules, { ...other, extraCa: [...(tlsSettings.extraCa ?? []), ...(other.extraCa ?? [])] }),
    close: async () => {
      for (const nodeAgent of nodeAgents) nodeAgent.destroy();
      await Promise.all([direct.close(), ...[...undiciProxies.values()].map((p) => p.close())]);
    },
  };
};

/** A Network with `options`; throws an Error naming the variable (never its value) of a proxy URL it cannot use. */
export const createNetwork = (options: NetworkOptions = {}): Network =>
  buildNetwork(proxyRules(options.proxy ?? {}), options.tls ?? {});

const pemBlock = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

// Mozilla's whole root store is 0.2 MiB; a ConfigMap (KServe's cabundle.crt) at most 1 MiB.
const maxCaBundleBytes = 16 * 2 ** 20;

class NotReadable extends Error {}

/**
 * The text of the regular file `file` (links followed: a mounted ConfigMap is made of them), at most `maxBytes`:
 * opened non-blocking and checked on its descriptor, so a FIFO never holds the start and a device (`/dev/zero`, which
 * has no end) is never read. Synchronous, as the start-up that reads it. Throws NotReadable, or the fs error.
 */
const readBoundedSync = (file: string, maxBytes: number): string => {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new NotReadable(`it is ${entryKind(stats)}, not a regular file`);
    if (stats.size > maxBytes) throw new NotReadable(`it is ${stats.size} bytes, over ${maxBytes}`);
    const buffer = Buffer.alloc(stats.size + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length < buffer.length; length += read)
      read = readSync(fd, buffer, length, buffer.length - length, length);
    // One byte past the size it had: it grew while being read.
    if (length > stats.size) throw new NotReadable(`it grew while being read, over ${stats.size} bytes`);
    return buffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
};

/** The PEM certificates of the CA bundle `file`, each parsed; the Left names the file (and a bad certificate's place). */
export const readCaBundle = (file: string): E.Either<string, ReadonlyArray<string>> => {
  let text: string;
  try {
    text = readBoundedSync(file, maxCaBundleBytes);
  } catch (cause) {
    const why = cause instanceof NotReadable ? cause.message : (errorCode(cause) ?? String(cause));
    return E.left(`cannot read the CA bundle ${file}: ${why}`);
  }
  const certificates = text.match(pemBlock) ?? [];
  if (certificates.length === 0) return E.left(`the CA bundle ${file} holds no PEM certificate`);
  for (const [index, pem] of certificates.entries()) {
    try {
      new X509Certificate(pem);
    } catch {
      return E.left(`certificate ${index + 1} of the CA bundle ${file} is not a valid X.509 certificate`);
    }
  }
  return E.right(certificates);
};

/** The process's Network: the proxy variables of `env` and `--ca-bundle`, if any; the Left says what is wrong. */
export const networkFrom = (
  settings: { readonly caBundle?: string | undefined },
  env: Env,
): E.Either<string, Network> =>
  E.flatMap(settings.caBundle === undefined ? E.right([]) : readCaBundle(settings.caBundle), (extraCa) =>
    E.tryCatch(() => createNetwork({ proxy: proxySettingsFrom(env), tls: { extraCa } }), errorMessage),
  );
