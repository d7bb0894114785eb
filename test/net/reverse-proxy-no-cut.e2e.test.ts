/**
 * reverseProxy never answers short: thousands of POSTs with bodies and 1 MiB answers at concurrency 16 over kept-alive
 * connections, every answer checked byte for byte (the KServe Go agent cuts some of these: docs/benchmarks.md).
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { atLeast } from '../helpers/log-sink';
import { startProxy, startUpstream, type ProxyBench, type Upstream } from './reverse-proxy-harness';

const MiB = 2 ** 20;
const requests = 2000;
const concurrency = 16;
/** The answers: 1 MiB each, which one chosen by the request (its X-Answer), so that a mixed-up answer shows too. */
const answers = Array.from({ length: 4 }, () => randomBytes(MiB));

let upstream: Upstream;
let bench: ProxyBench;
beforeEach(async () => {
  upstream = await startUpstream((req, res) => {
    const answer = answers[Number(req.headers['x-answer'])]!;
    const send = (): void => void res.writeHead(200, { 'Content-Length': answer.length }).end(answer);
    // Odd requests are answered as soon as their head is in, while the body still comes (a streaming server);
    // even ones once the body is read, as a model server does.
    if (Number(req.headers['x-early']) === 1) send();
    else req.on('end', send);
    req.resume();
  });
  bench = await startProxy(upstream.port, { maxSockets: concurrency, timeoutMs: 60_000 });
});
afterEach(async () => {
  await bench.close();
  await upstream.close();
});

/** What the client got of one POST: the status, and whether the body was the expected answer byte for byte. */
const post = (agent: Agent, i: number): Promise<{ status: number; whole: boolean }> =>
  new Promise((resolve, reject) => {
    const body = randomBytes(1024 * (1 + (i % 256)));
    const headers = { 'Content-Length': body.length, 'X-Answer': i % answers.length, 'X-Early': i % 2 };
    const path = '/v2/models/m/infer';
    const client = request(
      { host: '127.0.0.1', port: bench.port, method: 'POST', path, agent, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', () => undefined); // 'close' says how it ended
        res.on('close', () =>
          resolve({
            status: res.statusCode ?? 0,
            whole: res.complete && Buffer.concat(chunks).equals(answers[i % answers.length]!),
          }),
        );
      },
    );
    client.on('error', reject);
    client.end(body);
  });

describe('reverseProxy', () => {
  it('answers every POST with a body whole, byte for byte, at concurrency 16 over kept-alive connections', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
    let next = 0;
    const outcomes: Array<{ status: number; whole: boolean }> = [];
    const worker = async (): Promise<void> => {
      for (let i = next++; i < requests; i = next++) outcomes.push(await post(agent, i));
    };
    try {
      await Promise.all(Array.from({ length: concurrency }, worker));
    } finally {
      agent.destroy();
    }
    expect(outcomes).toHaveLength(requests);
    expect(outcomes.filter((outcome) => outcome.status !== 200 || !outcome.whole)).toEqual([]);
    expect(bench.log.lines.filter(atLeast('warn'))).toEqual([]);
  });
});
