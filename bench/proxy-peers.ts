/**
 * The peers of the proxy suite: modelsync's proxy, the floor and the KServe Go agent, each in a process of its own
 * (so that its RSS and CPU time are the proxy's alone), and the model server stand-in they proxy to.
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request, type Server } from 'node:http';
import {
  connect,
  createServer as createNetServer,
  type AddressInfo,
  type Server as NetServer,
} from 'node:net';
import path from 'node:path';
import { agentNodeFlags } from '../src/command/node-flags';
import { startHttpServer, writeRepeated } from '../src/testing/http-server';
import { startKserveAgent } from './kserve-agent';

const MiB = 2 ** 20;

/**
 * What runs behind the agent port: modelsync's proxy, the least a node:http proxy can do (the floor), Node's sockets
 * alone (`node-tcp`: a byte relay, no HTTP; what any Node proxy costs at the least), or KServe's Go agent.
 */
export type ProxyKind = 'floor' | 'modelsync' | 'node-tcp' | 'kserve-go';

/** The small request: a V2 inference call of about 1 KiB (128 FP32 values) and its answer. */
export const inferBody = Buffer.from(
  JSON.stringify({
    inputs: [
      {
        name: 'x',
        shape: [1, 128],
        datatype: 'FP32',
        data: Array.from({ length: 128 }, (_, i) => Math.round(Math.sin(i) * 1e4) / 1e4),
      },
    ],
  }),
);
/** The path of a tensor each way: a POST of `tensorBytes`, answered with as many. */
export const tensorPath = '/v2/models/m/tensor';
export const tensorBytes = MiB;
export const inferAnswer = Buffer.from(
  '{"model_name":"m","outputs":[{"name":"y","shape":[1],"datatype":"FP32","data":[0.5]}]}',
);

// ---- the child: one proxy in a process of its own, so that its RSS is the proxy's alone

/** modelsync's proxy as production mounts it: behind boundedServer with the agent port's kind of limits. */
const modelsyncProxy = async (upstreamPort: number): Promise<Server> => {
  // Loaded here, not at the top: the floor's child loads none of modelsync.
  const { reverseProxy } = await import('../src/net/reverse-proxy.js');
  const { boundedServer, defaultServerLimits } = await import('../src/net/bounded-server.js');
  const { default: pino } = await import('pino');
  const target = { host: '127.0.0.1', port: upstreamPort };
  const body = { stallMs: 20_000, minRate: 1024 };
  const proxy = reverseProxy({
    target,
    maxSockets: 256,
    timeoutMs: 60_000,
    body,
    log: pino({ level: 'warn' }),
  });
  const limits = {
    maxConnections: 1024,
    maxHeaderBytes: 64 * 1024,
    maxHeadersCount: 256,
    bodyTimeoutMs: 300_000,
  };
  return boundedServer({ ...defaultServerLimits, ...limits }, (req, res) => proxy.handle(req, res));
};

/** The floor: the least a Node proxy can do, a keep-alive agent and two pipes. */
const floorProxy = (upstreamPort: number): Server => {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  return createServer((req, res) => {
    const { method, url: path, headers } = req;
    const up = request({ host: '127.0.0.1', port: upstreamPort, method, path, headers, agent }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy()); // only so that a failure ends the run rather than the process
    req.pipe(up);
  });
};

/** Node's sockets alone: each connection relayed byte for byte to one of its own to the upstream, no HTTP parsed. */
const tcpRelay = (upstreamPort: number): NetServer =>
  createNetServer({ noDelay: true }, (client) => {
    const upstream = connect({ host: '127.0.0.1', port: upstreamPort, noDelay: true });
    const drop = (): void => void (client.destroy(), upstream.destroy());
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });

const child = async (): Promise<void> => {
  const [, kind, port] = process.argv.slice(2);
  const server =
    kind === 'modelsync'
      ? await modelsyncProxy(Number(port))
      : kind === 'node-tcp'
        ? tcpRelay(Number(port))
        : floorProxy(Number(port));
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('disconnect', () => process.exit(0));
};

// ---- the bench process: the upstream, the clients, the clock

export interface ProxyProcess {
  readonly port: number;
  readonly pid: number;
  readonly stop: () => void;
}

/**
 * Starts a proxy in a process of its own: the Go agent as KServe runs it (`--component-port`), or a Node child
 * (modelsync with the agent's Node.js flags, as its image runs; the floor with none).
 */
export const startProxyProcess = async (kind: ProxyKind, upstreamPort: number): Promise<ProxyProcess> => {
  if (kind !== 'kserve-go') return forkProxy(kind, upstreamPort);
  const agent = await startKserveAgent(['--component-port', String(upstreamPort)]);
  return { port: agent.port, pid: agent.pid, stop: agent.stop };
};

const forkProxy = (kind: Exclude<ProxyKind, 'kserve-go'>, upstreamPort: number): Promise<ProxyProcess> =>
  new Promise((resolve, reject) => {
    const proxy = fork(path.join(__dirname, 'proxy-peers.js'), ['--child', kind, String(upstreamPort)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: kind === 'modelsync' ? [...agentNodeFlags] : [],
    });
    proxy.once('error', reject);
    proxy.once('exit', (code) => reject(new Error(`the ${kind} proxy exited with code ${code}`)));
    proxy.once('message', (message) =>
      resolve({ port: (message as { port: number }).port, pid: proxy.pid!, stop: () => proxy.kill() }),
    );
  });

/** A random MiB: every tensor sent, and every answer of the stand-in. */
export const block = randomBytes(MiB);

/**
 * The model server stand-in: small inference answers, a tensor answered to a tensor (`tensorPath`, once the body is
 * read, as a model server does), 1 MiB answers and `/stream/<MiB>` of a random block.
 */
export const startUpstream = () =>
  startHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/mib' || req.url === tensorPath)
        return void res.writeHead(200, { 'Content-Length': MiB }).end(block);
      if (req.url?.startsWith('/stream/') === true) {
        const bytes = Number(req.url.slice('/stream/'.length)) * MiB;
        return writeRepeated(res.writeHead(200, { 'Content-Length': bytes }), block, bytes);
      }
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': inferAnswer.length });
      res.end(inferAnswer);
    });
  });

if (require.main === module && process.argv[2] === '--child') void child();
