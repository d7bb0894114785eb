/** The fault proxy tests lean on: what it leaves open when a client goes away (an open socket keeps a jest worker alive). */
import { get } from 'node:http';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { waitFor } from '../../src/testing/wait';
import { startFaultProxy, type FaultProxy } from './fault-proxy';

let upstream: RunningHttpServer | undefined;
let proxy: FaultProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  await upstream?.close();
});

describe('startFaultProxy', () => {
  it('drops its request upstream when its client goes away before the answer ended', async () => {
    let upstreamClosed = false;
    // 64 MiB, more than any socket buffers: the answer cannot be over when the client goes.
    upstream = await startHttpServer((request, response) => {
      request.socket.once('close', () => (upstreamClosed = true));
      response.writeHead(200, { 'Content-Length': 64 * 2 ** 20 });
      const chunk = Buffer.alloc(2 ** 20);
      const more = (): void => {
        while (response.write(chunk));
      };
      response.on('drain', more);
      more();
    });
    proxy = await startFaultProxy(upstream.url);
    await new Promise<void>((resolve, reject) =>
      get(`${proxy!.url}/big`, (answer) => {
        answer.once('data', () => {
          answer.destroy();
          resolve();
        });
      }).on('error', reject),
    );
    await waitFor(() => upstreamClosed, 10_000, 'the connection upstream to close');
  });
});
