/**
 * Storage peers that never finish an answer's head, against the storage initializer (the real CLI): `103 Early Hints`
 * without end, a head dripped a byte at a time, nothing at all. Each client's own head timeout restarts with every
 * byte or interim answer (undici's headersTimeout, node:http's socket timeout), and the Azure SDK's timeout is one it
 * asks the server to keep: each such download waited for days. Now every request's final head comes within
 * `--request-timeout-ms` of its sending, or the pair fails as a timeout.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { killAllCli, runCli } from '../../helpers/cli-process';
import { useTempDir } from '../../helpers/temp-dir';

type Mode = 'early-hints' | 'drip' | 'silent';

/** A storage endpoint that reads each request and answers its head as `mode` says, for ever. */
const startHeadless = async (
  mode: Mode,
): Promise<{ readonly port: number; readonly close: () => Promise<void> }> => {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    let timer: NodeJS.Timeout | undefined;
    socket.once('close', () => {
      clearInterval(timer);
      sockets.delete(socket);
    });
    socket.once('data', () => {
      if (mode === 'early-hints')
        timer = setInterval(
          () => socket.write('HTTP/1.1 103 Early Hints\r\nLink: </w>; rel=preload\r\n\r\n'),
          100,
        );
      if (mode === 'drip') {
        socket.write('HTTP/1.1 200 OK\r\nX-Drip: ');
        timer = setInterval(() => socket.write('a'), 100);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

/** The initializer's arguments for a model of each scheme on the endpoint at `port`. */
const schemes: Readonly<Record<string, (port: number) => { args: string[]; env?: Record<string, string> }>> =
  {
    http: (port) => ({ args: [`http://127.0.0.1:${port}/model.bin`] }),
    s3: (port) => ({
      args: ['--s3-endpoint', `http://127.0.0.1:${port}`, 's3://models/m'],
      env: { AWS_ACCESS_KEY_ID: 'AKIAHEADLESS00000001', AWS_SECRET_ACCESS_KEY: 'headless-secret-key-0001' },
    }),
    gs: (port) => ({ args: ['--gcs-endpoint', `http://127.0.0.1:${port}`, 'gs://models/m'] }),
    hf: (port) => ({ args: ['hf://org/model'], env: { HF_ENDPOINT: `http://127.0.0.1:${port}` } }),
    azure: (port) => ({
      args: ['--azure-blob-endpoint', `http://127.0.0.1:${port}`, `http://127.0.0.1:${port}/acct/models/m`],
      env: { AZURE_STORAGE_ACCESS_KEY: Buffer.from('headless-account-key').toString('base64') },
    }),
  };

const tmp = useTempDir('storage-heads');
afterEach(killAllCli);

describe('the storage initializer against a peer that never finishes a head', () => {
  const cases: Array<[string, Mode]> = [
    ...Object.keys(schemes).map((scheme): [string, Mode] => [scheme, 'early-hints']),
    ['s3', 'drip'],
    ['azure', 'drip'],
    ['azure', 'silent'],
  ];
  it.each(cases)(
    'fails a %s download answered with %s as a timeout, within the request timeout',
    async (scheme, mode) => {
      const peer = await startHeadless(mode);
      try {
        const { args, env } = schemes[scheme]!(peer.port);
        const dest = join(tmp.path, `${scheme}-${mode}`);
        const run = await runCli(['--request-timeout-ms', '500', '--max-attempts', '1', ...args, dest], {
          env: env ?? {},
          timeoutMs: 20_000,
        });
        expect(run.code).toBe(1);
        expect(run.stderr.text).toMatch(/"errorKind":"timeout"|"kind":"timeout"/);
      } finally {
        await peer.close();
      }
    },
    30_000,
  );
});
