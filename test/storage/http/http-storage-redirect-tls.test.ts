/**
 * A redirect to another origin (a presigned URL, a CDN) whose TLS fails: the failure names that origin, not only the
 * URL the user gave, whose server answered fine.
 */
import { createNetwork } from '../../../src/net';
import { httpStorage } from '../../../src/storage/http/http-storage';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';
import { serverTls } from '../../helpers/tls';

// Node's roots only: the test CA that signed the CDN's certificate is not trusted.
const network = createNetwork();
afterAll(() => network.close());
const never = new AbortController().signal;

describe('httpStorage: a redirect whose TLS fails', () => {
  const serve = useHttpServers();
  const tmp = useTempDir('redirect-tls');

  it('names the origin it was redirected to in the failure', async () => {
    const cdn = await serve((_req, res) => void res.end('weights'), { tls: serverTls() });
    const origin = await serve(
      (_req, res) => void res.writeHead(302, { location: `${cdn.url}/blob?sig=s3cr3t` }).end(),
    );
    const failure = await httpStorage({ headersByHost: new Map(), network })
      .download(`${origin.url}/m.bin`, tmp.path, never)
      .then(
        () => undefined,
        (error: unknown) => error as { kind?: string; message?: string },
      );
    expect(failure?.kind).toBe('network');
    expect(failure?.message).toBe(
      `GET ${origin.url}/m.bin failed: redirected to ${cdn.url}: unable to verify the first certificate (trust its CA with --ca-bundle)`,
    );
  });
});
