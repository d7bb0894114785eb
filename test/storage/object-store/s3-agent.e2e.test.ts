/** The agent on its production edges, configured with KServe's S3 environment names, against s3rver behind a fault proxy. */
import { useAgentHarness } from '../../helpers/agent-harness';
import { startFaultProxy, type FaultProxy } from '../../helpers/fault-proxy';
import { modelsJson } from '../../helpers/fixtures';
import { checkSignatures, freshS3Keys, startS3Server, type S3Server } from '../../helpers/s3-server';
import { SecretScan } from '../../helpers/secrets';

let server: S3Server;
let proxy: FaultProxy;
const start = useAgentHarness();

beforeAll(async () => {
  server = await startS3Server();
  proxy = await startFaultProxy(server.url);
  proxy.inject(checkSignatures(server.keys));
  await server.createBucket('models');
  await server.put('models', {
    'm1/config.pbtxt': 'name: "m1"',
    'm1/1/model.onnx': 'onnx',
    'moving/weights.bin': Buffer.alloc(500_000, 'old-'),
  });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await server?.close();
});

/** KServe's names for a MinIO-style endpoint and keys. */
const kserveEnv = (keys = server.keys) => ({
  AWS_ENDPOINT_URL: proxy.url,
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: keys.accessKeyId,
  AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
});

describe('agent with s3:// models', () => {
  it("loads a model from S3 configured with KServe's environment names, and logs no key", async () => {
    const h = await start({ env: kserveEnv(), setup: (h) => h.write(modelsJson({ m1: 's3://models/m1' })) });
    await h.waitForReady();
    expect(h.lastStatus('m1')?.phase).toBe('Loaded');
    expect(await h.modelFile('m1', '1/model.onnx')).toBe('onnx');
    new SecretScan([
      { label: 'access key id', value: server.keys.accessKeyId },
      { label: 'secret key', value: server.keys.secretAccessKey },
    ])
      .add('log', h.sink.lines)
      .add('events', h.events)
      .expectNoLeaks();
  });

  it('retries a model whose object changed mid-download and loads the new version', async () => {
    let replaced = false;
    proxy.inject({
      when: (r) => (r.url ?? '').startsWith('/models/moving/weights.bin') && !replaced,
      cutAfter: 100_000,
      onCut: async () => {
        await server.put('models', { 'moving/weights.bin': Buffer.alloc(500_000, 'new-') });
        replaced = true;
      },
    });
    const h = await start({
      env: kserveEnv(),
      setup: (h) => h.write(modelsJson({ moving: 's3://models/moving/weights.bin' })),
    });
    await h.waitForReady();
    expect(h.lastStatus('moving')?.phase).toBe('Loaded');
    const retrying = h.events.flatMap((e) =>
      e._tag === 'Status' && e.status.phase === 'Retrying' ? [e.status] : [],
    );
    expect(retrying.map((s) => s.errorKind)).toEqual(['changed']);
    expect(await h.modelFile('moving', 'weights.bin')).toBe(Buffer.alloc(500_000, 'new-').toString());
  });

  it('fails a model for good on a missing bucket, naming it', async () => {
    const h = await start({
      env: kserveEnv(),
      setup: (h) => h.write(modelsJson({ nobucket: 's3://no-such-bucket/m1' })),
    });
    await h.waitForReady();
    const status = h.lastStatus('nobucket');
    expect(status).toMatchObject({ phase: 'Failed', errorKind: 'not-found' });
    // The endpoint of one's own store named: which server said so.
    expect(status?.reason).toContain(
      `listing bucket no-such-bucket under "m1/" at ${proxy.url}: NoSuchBucket`,
    );
  });

  it('fails a model for good on wrong keys, hiding them from every log line and event', async () => {
    const wrong = freshS3Keys();
    const h = await start({
      env: kserveEnv(wrong),
      setup: (h) => h.write(modelsJson({ denied: 's3://models/m1' })),
    });
    await h.waitForReady();
    const status = h.lastStatus('denied');
    expect(status).toMatchObject({ phase: 'Failed', errorKind: 'http-status' });
    expect(status?.reason).toContain('listing bucket models');
    expect(status?.reason).toContain('InvalidAccessKeyId');
    new SecretScan([
      { label: 'access key id', value: wrong.accessKeyId },
      { label: 'secret key', value: wrong.secretAccessKey },
    ])
      .add('log', h.sink.lines)
      .add('events', h.events)
      .expectNoLeaks();
  });
});
