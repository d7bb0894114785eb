import { randomBytes } from 'node:crypto';
import { request, type Agent } from 'node:http';
import { sharedReadAgent } from '../../src/net/shared-read-agent';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';

const KiB = 1024;
/** Answers of many reads each, one per path, with a long header that a read may split. */
const answers = Array.from({ length: 6 }, (_answer, i) => randomBytes(300 * KiB + i * 7777));
const longHeader = 'x'.repeat(6000);

let server: RunningHttpServer;
let agent: Agent;
beforeEach(async () => {
  server = await startHttpServer((req, res) => {
    const answer = answers[Number(req.url!.slice(1))]!;
    res.writeHead(200, { 'X-Long': longHeader, 'Content-Length': answer.length });
    // In pieces, so that reads end anywhere in the head and the body.
    let at = 0;
    const next = (): void => {
      if (at >= answer.length) return void res.end();
      const piece = answer.subarray(at, (at += 1000 + ((at * 31) % 50_000)));
      if (res.write(piece)) setImmediate(next);
      else res.once('drain', next);
    };
    next();
  });
  agent = sharedReadAgent({ keepAlive: true, maxSockets: 4 });
});
afterEach(async () => {
  agent.destroy();
  await server.close();
});

const get = (i: number): Promise<{ body: Buffer; long: string | undefined; reused: boolean }> =>
  new Promise((resolve, reject) => {
    const client = request(`${server.url}/${i}`, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          body: Buffer.concat(chunks),
          long: res.headers['x-long'] as string,
          reused: client.reusedSocket,
        }),
      );
      res.on('error', reject);
    });
    client.on('error', reject).end();
  });

describe('sharedReadAgent', () => {
  it('gives every answer whole when many sockets read into the one buffer at once', async () => {
    const got = await Promise.all(Array.from({ length: 24 }, (_request, i) => get(i % answers.length)));
    got.forEach(({ body, long }, i) => {
      expect(long).toBe(longHeader);
      expect(body.equals(answers[i % answers.length]!)).toBe(true);
    });
  });

  it('keeps its sockets alive between requests, as node:http’s Agent does', async () => {
    await get(0);
    const again = await get(1);
    expect(again.reused).toBe(true);
    expect(again.body.equals(answers[1]!)).toBe(true);
  });

  it('gives an answer whole when its reader is slow: the socket pauses and reads on', async () => {
    const body = await new Promise<Buffer>((resolve, reject) => {
      const client = request(`${server.url}/5`, { agent }, (res) => {
        const chunks: Buffer[] = [];
        res.pause();
        const drip = setInterval(() => {
          let chunk: Buffer | null;
          while ((chunk = res.read(16 * KiB) as Buffer | null) !== null) chunks.push(chunk);
        }, 5);
        res.on('end', () => {
          clearInterval(drip);
          resolve(Buffer.concat(chunks));
        });
        res.on('error', reject);
      });
      client.on('error', reject).end();
    });
    expect(body.equals(answers[5]!)).toBe(true);
  });
});
