/**
 * The agent port against clients that hold its connections, on the real CLI with KServe's args (`--component-port`)
 * beside a model server (a V2 stand-in for what modelsync asks of it; inference answered by the test): request
 * bodies that stall or trickle, heads that trickle, kept-alive connections left idle, clients that stop reading
 * their answer. The kubelet's probe and `/healthz` are answered all the while, slow uploads that keep progressing
 * go through, and a body that does not ends with 408, its request to the model server aborted.
 */
import { mkdir } from 'node:fs/promises';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { sleep, waitFor, withTimeout } from '../../src/testing/wait';
import { killAllCli, startCli, type CliProcess } from '../helpers/cli-process';
import { eventually } from '../helpers/eventually';
import { rawSocket, type RawSocket } from '../helpers/raw-socket';
import { removeTempDir, tempDir } from '../helpers/temp-dir';
import { freePort } from '../integration/surface-kit';
import { startUpstream, type Upstream } from '../net/reverse-proxy-harness';
import { exchange } from './exchange';
import { agentArgs, kubeletProbeHeaders } from './pod-shapes';

jest.setTimeout(120_000);

/** One inference request as the model server saw it. */
interface Inference {
  readonly path: string;
  bytes: number;
  ended: boolean;
  /** Closed before its body ended: the agent aborted it. */
  aborted: boolean;
}

/** The model server: inference requests recorded and answered here, the rest by a V2 stand-in. */
interface ModelServer {
  readonly port: number;
  readonly inferences: Inference[];
  readonly close: () => Promise<void>;
}

/** An answer bigger than any socket buffer: a client that does not read it holds its connection. */
const bigAnswer = Buffer.alloc(32 * 2 ** 20, 'a');

const forwardTo = (v2: V2ModelServerStandIn) => (req: IncomingMessage, res: ServerResponse) => {
  const target = new URL(req.url ?? '/', v2.url);
  const forwarded = request(target, { method: req.method, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  forwarded.on('error', () => res.destroy());
  req.pipe(forwarded);
};

const startModelServer = async (): Promise<ModelServer> => {
  const v2 = await startV2ModelServer();
  const inferences: Inference[] = [];
  const forward = forwardTo(v2);
  let upstream: Upstream | undefined = await startUpstream((req, res) => {
    const path = req.url ?? '/';
    if (!path.endsWith('/infer')) return forward(req, res);
    const seen: Inference = { path, bytes: 0, ended: false, aborted: false };
    inferences.push(seen);
    req.on('data', (chunk: Buffer) => (seen.bytes += chunk.length));
    req.on('end', () => {
      seen.ended = true;
      if (path.startsWith('/v2/models/big/')) res.end(bigAnswer);
      else res.end(JSON.stringify({ bytes: seen.bytes }));
    });
    req.on('close', () => (seen.aborted = !seen.ended));
  });
  return {
    port: upstream.port,
    inferences,
    close: async () => {
      await upstream?.close();
      upstream = undefined;
      await v2.close();
    },
  };
};

let root: string;
let server: ModelServer | undefined;
const clients: RawSocket[] = [];

beforeEach(async () => {
  root = await tempDir('agent-port-crowds');
  atomicWrite(join(root, 'configs'), { 'models.json': '[]' });
  await mkdir(join(root, 'models'));
  server = await startModelServer();
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  await killAllCli();
  await server?.close();
  server = undefined;
  await removeTempDir(root);
});

/** The agent with KServe's args, `flags` and `env`; resolves with its port once the kubelet's probe passes. */
const startAgent = async (
  flags: ReadonlyArray<string>,
  env: Record<string, string> = {},
): Promise<{ readonly agent: CliProcess; readonly port: number }> => {
  const port = await freePort();
  const agent = startCli(
    [
      ...agentArgs({
        configMountPath: join(root, 'configs'),
        modelDir: join(root, 'models'),
        componentPort: server!.port,
      }),
      ...flags,
    ],
    { env: { ...env, MODELSYNC_HTTP_PORT: String(port), MODELSYNC_LOG_FORMAT: 'json' } },
  );
  await eventually(
    'the kubelet probe to pass',
    async () => (await answerOf(port, 'GET', '/', kubeletProbeHeaders)) === '200 queue',
    30_000,
    () => agent.transcript(20),
  );
  return { agent, port };
};

/** `method path` on a connection of its own: `<status> <body>`, or how the connection failed. */
const answerOf = async (
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: Buffer,
): Promise<string> => {
  try {
    const answer = await exchange(`http://127.0.0.1:${port}`, method, path, headers, body);
    return `${answer.status} ${answer.body.toString()}`;
  } catch (error) {
    return `failed: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
};

/** The kubelet's probe, `/healthz` and `/readyz`, as `<status> <body start>`. */
const probes = async (port: number): Promise<string[]> =>
  Promise.all([
    answerOf(port, 'GET', '/', kubeletProbeHeaders),
    answerOf(port, 'GET', '/healthz').then((answer) => answer.slice(0, 20)),
    answerOf(port, 'GET', '/readyz').then((answer) => answer.slice(0, 20)),
  ]);

const probesPass = ['200 queue', '200 {"status":"ok","', '200 {"status":"ready'];

const connect = async (port: number): Promise<RawSocket> => {
  const client = await rawSocket(port);
  clients.push(client);
  return client;
};

const postHead = (model: string, length: number): string =>
  `POST /v2/models/${model}/infer HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\n` +
  `Connection: close\r\nContent-Length: ${length}\r\n\r\n`;

/** A client that sends a request head announcing 1,000 bytes of body, 10 of them, then nothing. */
const stalledBody = async (port: number): Promise<RawSocket> => {
  const client = await connect(port);
  client.socket.write(`${postHead('stalled', 1000)}{"inputs":`);
  return client;
};

/** A client that sends `chunks` chunks of `chunk` bytes, one every `everyMs`, and resolves with the answer. */
const upload = async (port: number, chunks: number, chunk: number, everyMs: number): Promise<string> => {
  const client = await connect(port);
  client.socket.write(postHead('upload', chunks * chunk));
  for (let i = 0; i < chunks && client.open(); i++) {
    await sleep(everyMs);
    client.socket.write(Buffer.alloc(chunk, 'u'));
  }
  await client.closed;
  return client.received();
};

/** Resolves once the model server has seen `count` inference requests in all. */
const inferencesSeen = (count: number): Promise<void> =>
  waitFor(
    () => server!.inferences.length >= count,
    15_000,
    `${count} inference requests at the model server`,
  );

describe('the agent port under crowds that hold its connections', () => {
  it('answers the kubelet probe and /healthz while stalled request bodies hold every connection, and ends each with 408', async () => {
    const { port } = await startAgent(['--proxy-max-connections', '4'], {
      MODELSYNC_PROXY_BODY_TIMEOUT: '2s',
    });
    const stalled = await Promise.all(Array.from({ length: 4 }, () => stalledBody(port)));
    await inferencesSeen(4);
    for (let round = 0; round < 3; round++) expect(await probes(port)).toEqual(probesPass);
    // Each stalled body ends: 408, then the connection closed (generous: the body timeout is 2 s).
    await withTimeout(
      Promise.all(stalled.map((client) => client.closed)),
      30_000,
      'the stalled bodies to end',
    );
    expect(stalled.map((client) => client.received().slice(0, 12))).toEqual(
      Array.from({ length: 4 }, () => 'HTTP/1.1 408'),
    );
    await waitFor(
      () => server!.inferences.every((inference) => inference.aborted),
      10_000,
      'every stalled request aborted at the model server',
    );
    expect(server!.inferences.some((inference) => inference.ended)).toBe(false);
  });

  it('answers the kubelet probe with the default 1,024 connections held by stalled request bodies', async () => {
    const { port } = await startAgent([]);
    for (let i = 0; i < 1024; i++) await stalledBody(port);
    await inferencesSeen(1024);
    expect(await probes(port)).toEqual(probesPass);
  });

  it('takes slow uploads that keep progressing, each longer than the body timeout, while probes are answered', async () => {
    const { port } = await startAgent(['--proxy-max-connections', '4'], {
      MODELSYNC_PROXY_BODY_TIMEOUT: '2s',
    });
    // 20 chunks of 512 bytes, one each 200 ms: 4 s in all, 2.5 KiB/s (the minimum rate is 1 KiB/s).
    const uploads = Array.from({ length: 4 }, () => upload(port, 20, 512, 200));
    await inferencesSeen(4);
    const during: string[][] = [];
    for (let round = 0; round < 3; round++) {
      during.push(await probes(port));
      await sleep(300);
    }
    const answers = await Promise.all(uploads);
    expect(during).toEqual([probesPass, probesPass, probesPass]);
    expect(
      answers.map((answer) => answer.split('\r\n')[0] + answer.slice(answer.indexOf('\r\n\r\n'))),
    ).toEqual(Array.from({ length: 4 }, () => 'HTTP/1.1 200 OK\r\n\r\n{"bytes":10240}'));
  });

  it('ends a body trickled below the minimum rate with 408, however steady, and aborts its request upstream', async () => {
    const { port } = await startAgent([], {
      MODELSYNC_PROXY_BODY_TIMEOUT: '1s',
      MODELSYNC_PROXY_BODY_MIN_RATE: '1Ki',
    });
    // 10 bytes every 100 ms: never a second without a byte, but 100 bytes/s.
    const answer = upload(port, 600, 10, 100);
    expect((await withTimeout(answer, 30_000, 'the trickle to end')).slice(0, 21)).toBe(
      'HTTP/1.1 408 Request ',
    );
    await waitFor(() => server!.inferences[0]?.aborted === true, 10_000, 'the trickled request aborted');
  });

  it('gives a new request the connection of a body that brought nothing for a second, with 408 to the stalled one', async () => {
    const { port } = await startAgent(['--proxy-max-connections', '4'], {
      MODELSYNC_PROXY_BODY_TIMEOUT: '60s',
    });
    const stalled = await Promise.all(Array.from({ length: 4 }, () => stalledBody(port)));
    await inferencesSeen(4);
    await sleep(1500);
    const body = Buffer.from('{"inputs":[]}');
    expect(
      await answerOf(port, 'POST', '/v2/models/m/infer', { 'content-type': 'application/json' }, body),
    ).toBe('200 {"bytes":13}');
    await waitFor(() => stalled.some((client) => !client.open()), 10_000, 'a stalled body to give way');
    const ended = stalled.filter((client) => !client.open());
    expect(ended.map((client) => client.received().slice(0, 12))).toEqual(ended.map(() => 'HTTP/1.1 408'));
  });

  it('answers probes while the whole class holds the port: unread answers, slow uploads, trickled heads, idle connections', async () => {
    const { port } = await startAgent(['--proxy-max-connections', '4'], {
      MODELSYNC_PROXY_BODY_TIMEOUT: '2s',
    });
    // Two clients that stop reading a 32 MiB answer, and two uploads that keep progressing: none may give way.
    const readers = await Promise.all(Array.from({ length: 2 }, () => connect(port)));
    for (const reader of readers) {
      reader.socket.pause();
      reader.socket.write('GET /v2/models/big/infer HTTP/1.1\r\nHost: agent\r\n\r\n');
    }
    const uploads = Array.from({ length: 2 }, () => upload(port, 20, 512, 200));
    await inferencesSeen(4);
    // And 40 more: trickled heads and idle kept-alive connections, more than the port holds.
    for (let i = 0; i < 20; i++) {
      (await connect(port)).socket.write('GET /healthz HTTP/1.1\r\nHost: agent\r\n');
      (await connect(port)).socket.write('GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n');
    }
    for (let round = 0; round < 3; round++) expect(await probes(port)).toEqual(probesPass);
    expect(readers.every((reader) => reader.open())).toBe(true);
    expect((await Promise.all(uploads)).map((answer) => answer.slice(0, 15))).toEqual([
      'HTTP/1.1 200 OK',
      'HTTP/1.1 200 OK',
    ]);
  });
});
