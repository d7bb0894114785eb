/**
 * Answers given before a request body is read, on the real process (dist/cli.js): the HTTP surface's 405 and 413,
 * the 431 of an over-long head, and on the agent port (`--component-port`) the proxy's 502. Each client here
 * sends its whole request before it reads a byte (as Python's http.client does), so an answer followed by a close
 * while the body still arrives reaches it as a reset, not as the answer.
 */
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { sendWhole } from '../helpers/raw-socket';
import { useTempDir } from '../helpers/temp-dir';
import { freePort } from './surface-kit';

jest.setTimeout(120_000);

let standIn: V2ModelServerStandIn | undefined;
afterEach(async () => {
  await killAllCli();
  await standIn?.close();
  standIn = undefined;
});
const tmp = useTempDir('surface-early');

/** The agent on a stand-in, its surface on a free port (with `agentPort`, KServe's agent port); resolves with it. */
const startAgent = async ({ agentPort = false } = {}): Promise<number> => {
  standIn = await startV2ModelServer();
  const configDir = join(tmp.path, 'configs');
  atomicWrite(configDir, { 'models.json': '[]' });
  const port = await freePort();
  const server: Record<string, string> = agentPort
    ? { 'component-port': new URL(standIn.url).port }
    : { 'server-url': standIn.url };
  const agent = startCli(
    cliArgs({ 'config-dir': configDir, 'model-dir': join(tmp.path, 'models'), 'http-port': port, ...server }),
  );
  await agent.waitForLog('HTTP surface listening', 15_000);
  return port;
};

const body = Buffer.alloc(4 * 2 ** 20, 'b');

/** `<status line>` of each answer, or how the connection failed. */
const outcome = ({ received, error }: { received: string; error?: string }): string =>
  error !== undefined
    ? `failed: ${error} after ${JSON.stringify(received.slice(0, 12))}`
    : received.split('\r\n')[0]!;

describe('answers given before the request body is read', () => {
  it('gets every 405 of the HTTP surface to a client sending 4 MiB bodies, 20 times, none reset', async () => {
    const port = await startAgent();
    const methods = ['POST', 'PUT', 'PATCH', 'DELETE'];
    const paths = ['/healthz', '/readyz', '/metrics', '/status', '/nowhere'];
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++) {
      const head = `${methods[i % 4]} ${paths[i % 5]} HTTP/1.1\r\nHost: agent\r\nContent-Length: ${body.length}\r\n\r\n`;
      outcomes.push(outcome(await sendWhole(port, head, body)));
    }
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => 'HTTP/1.1 405 Method Not Allowed'));
  });

  it('gets every 413 to a GET with a 4 MiB body, chunked or with a length, none reset', async () => {
    const port = await startAgent();
    const chunked = Buffer.concat([
      Buffer.from(`${body.length.toString(16)}\r\n`),
      body,
      Buffer.from('\r\n0\r\n\r\n'),
    ]);
    const outcomes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const framing = i % 2 === 0 ? `Content-Length: ${body.length}` : 'Transfer-Encoding: chunked';
      const head = `GET /status HTTP/1.1\r\nHost: agent\r\n${framing}\r\n\r\n`;
      outcomes.push(outcome(await sendWhole(port, head, i % 2 === 0 ? body : chunked)));
    }
    expect(outcomes).toEqual(Array.from({ length: 10 }, () => 'HTTP/1.1 413 Payload Too Large'));
  });

  it('gets every 431 to a client sending a 1 MiB header, none reset', async () => {
    const port = await startAgent();
    const outcomes: string[] = [];
    for (let i = 0; i < 10; i++) {
      const head = `GET /healthz HTTP/1.1\r\nHost: agent\r\nCookie: ${'c'.repeat(2 ** 20)}\r\n\r\n`;
      outcomes.push(outcome(await sendWhole(port, head, Buffer.alloc(0))));
    }
    expect(outcomes).toEqual(
      Array.from({ length: 10 }, () => 'HTTP/1.1 431 Request Header Fields Too Large'),
    );
  });

  it("gets the agent port's 405 and the proxy's 502 (the model server down) to clients sending 4 MiB bodies, none reset", async () => {
    const port = await startAgent({ agentPort: true });
    const post = (path: string): string =>
      `POST ${path} HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const surface: string[] = [];
    for (let i = 0; i < 10; i++) surface.push(outcome(await sendWhole(port, post('/healthz'), body)));
    await standIn!.close();
    standIn = undefined;
    const proxied: string[] = [];
    for (let i = 0; i < 10; i++)
      proxied.push(outcome(await sendWhole(port, post('/v2/models/m/infer'), body)));
    expect(surface).toEqual(Array.from({ length: 10 }, () => 'HTTP/1.1 405 Method Not Allowed'));
    expect(proxied).toEqual(Array.from({ length: 10 }, () => 'HTTP/1.1 502 Bad Gateway'));
  });
});
