/**
 * The AWS default chain's own requests: web identity (IRSA) assumes its role through STS, and that request takes
 * the Network's connections like every storage request, so a cluster whose only way out is HTTPS_PROXY gets its
 * credentials (KServe's initializer, boto3, honours the proxy variables for STS too).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createNetwork } from '../../../src/net';
import { s3Credentials } from '../../../src/storage/object-store/s3-credentials';
import { startProxy, type TestProxy } from '../../helpers/proxy';
import { useTempDir } from '../../helpers/temp-dir';

const tmp = useTempDir('s3-credentials');

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await startProxy();
});
afterAll(() => proxy.close());

describe('s3Credentials with web identity (IRSA)', () => {
  it("assumes the role through the Network's proxy", async () => {
    const tokenFile = join(tmp.path, 'token');
    await writeFile(tokenFile, 'not-a-real-web-identity-token');
    const network = createNetwork({ proxy: { httpsProxy: proxy.url } });
    const env = {
      HOME: tmp.path,
      AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile,
      AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/models',
      AWS_REGION: 'eu-west-1',
    };
    try {
      const credentials = s3Credentials({ anonymous: false, agent: () => network.agent }, env);
      if (credentials === 'anonymous') throw new Error('anonymous');
      // The proxy reaches no STS here: the exchange fails, after it went through the proxy.
      await expect(credentials()).rejects.toThrow();
    } finally {
      await network.close();
    }
    expect(proxy.requests.map((request) => `${request.method} ${request.target}`)).toContainEqual(
      expect.stringMatching(/^CONNECT sts\.[a-z0-9-]+\.amazonaws\.com:443$/),
    );
  });
});
