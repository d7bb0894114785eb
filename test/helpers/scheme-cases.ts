/**
 * The storage cases of the end-to-end tests: for each scheme (and each provider claiming URIs of one) a real
 * server on 127.0.0.1 holding one model, `model.bin`, and what the agent needs to reach it (flags, env vars).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGcsStandIn, type GcsStandIn } from '../../src/testing/gcs-stand-in';
import { startHttpServer } from '../../src/testing/http-server';
import { startHubStandIn } from '../../src/testing/hub-stand-in';
import { useAzurite } from './azurite';
import { writeFiles } from './file-tree';
import { startS3Server, type S3Server } from './s3-server';

/** One case's model: its URI, and what the agent needs to reach it. */
export interface SchemeModel {
  readonly uri: string;
  /** `127.0.0.1:<port>` the agent downloads it from (a proxy must see it); none for local files. */
  readonly endpoint?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly flags?: Readonly<Record<string, string>>;
}

/** What a case is asked for. */
export interface CaseSetup {
  /** A dir of the test's own (local files go there). */
  readonly root: string;
  /** The bytes of the model's one file. */
  readonly content: string | Buffer;
  /** The port the agent is to use for a server on `port`: that port, or a relay's in front of it. */
  readonly reach: (port: number) => Promise<number>;
  /** Where a case leaves what closes the servers it started for this test. */
  readonly closers: Array<() => Promise<unknown>>;
}

/** Puts one model in place on its server and says how the agent finds it. */
export type SchemeCase = (setup: CaseSetup) => Promise<SchemeModel>;

const tlsFixture = (name: string): string =>
  readFileSync(join(__dirname, '..', 'fixtures', 'tls', name), 'utf8');

/** The test CA that signed the https case's certificate (for 127.0.0.1). */
export const testCaBundle = join(__dirname, '..', 'fixtures', 'tls', 'ca.pem');

/** A server answering every GET with `content`, started for one test. */
const serveHttp = async (tls: boolean, { content, reach, closers }: CaseSetup): Promise<SchemeModel> => {
  const body = Buffer.from(content);
  const server = await startHttpServer(
    (_req, res) => void res.writeHead(200, { 'content-length': body.length }).end(body),
    tls ? { tls: { key: tlsFixture('server-key.pem'), cert: tlsFixture('server.pem') } } : {},
  );
  closers.push(() => server.close());
  const port = await reach(server.port);
  return {
    uri: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/model.bin`,
    endpoint: `127.0.0.1:${port}`,
    ...(tls ? { flags: { 'ca-bundle': testCaBundle } } : {}),
  };
};

/**
 * For a test file: s3rver, the GCS stand-in and azurite started before its tests (stopped after them), and one case
 * per storage scheme and claiming provider. Each case puts its model under a fresh prefix.
 */
export const useSchemeCases = (): Readonly<Record<string, SchemeCase>> => {
  let s3: S3Server | undefined;
  let gcs: GcsStandIn | undefined;
  const azurite = useAzurite();
  beforeAll(async () => {
    [s3, gcs] = await Promise.all([startS3Server(), startGcsStandIn()]);
    await s3.createBucket('models');
  }, 60_000);
  afterAll(async () => {
    await Promise.all([s3?.close(), gcs?.close()]);
  });
  let models = 0;
  const freshPrefix = (): string => `e2e-${++models}`;

  return {
    file: async ({ root, content }) => {
      const prefix = freshPrefix();
      await writeFiles(join(root, 'pvc'), { [`${prefix}/model.bin`]: content });
      return { uri: join(root, 'pvc', prefix), flags: { 'local-storage-roots': join(root, 'pvc') } };
    },
    // KServe's pvc://<claim>/<path>: <path> under where the claim is mounted (the claim's name is not part of it).
    pvc: async ({ root, content }) => {
      const prefix = freshPrefix();
      await writeFiles(join(root, 'claim'), { [`models/${prefix}/model.bin`]: content });
      return { uri: `pvc://model-claim/models/${prefix}`, flags: { 'pvc-mount-root': join(root, 'claim') } };
    },
    http: (setup) => serveHttp(false, setup),
    https: (setup) => serveHttp(true, setup),
    s3: async ({ content, reach }) => {
      const prefix = freshPrefix();
      await s3!.put('models', { [`${prefix}/model.bin`]: content });
      const port = await reach(s3!.port);
      return {
        uri: `s3://models/${prefix}`,
        endpoint: `127.0.0.1:${port}`,
        flags: { 's3-endpoint': `http://127.0.0.1:${port}` },
        env: { AWS_ACCESS_KEY_ID: s3!.keys.accessKeyId, AWS_SECRET_ACCESS_KEY: s3!.keys.secretAccessKey },
      };
    },
    gs: async ({ content, reach }) => {
      const prefix = freshPrefix();
      gcs!.put('models', `${prefix}/model.bin`, Buffer.from(content));
      const port = await reach(Number(new URL(gcs!.url).port));
      return {
        uri: `gs://models/${prefix}`,
        endpoint: `127.0.0.1:${port}`,
        flags: { 'gcs-endpoint': `http://127.0.0.1:${port}` },
      };
    },
    // A Hub stand-in of its own per case: `model.bin` is an LFS file, redirected to the CDN, which `reach` fronts too.
    hf: async ({ content, reach, closers }) => {
      const hub = await startHubStandIn();
      closers.push(() => hub.close());
      hub.commit('org/model', { 'model.bin': { data: Buffer.from(content), lfs: true } });
      const port = await reach(Number(new URL(hub.url).port));
      hub.serveCdnVia(`http://127.0.0.1:${await reach(Number(new URL(hub.cdnUrl).port))}`);
      return {
        uri: 'hf://org/model',
        endpoint: `127.0.0.1:${port}`,
        env: { HF_ENDPOINT: `http://127.0.0.1:${port}` },
      };
    },
    // Azure Blob URIs are http(s) URLs the Azure provider claims (here: under --azure-blob-endpoint).
    azure: async ({ content, reach }) => {
      const prefix = freshPrefix();
      const { account, accountKey, url } = azurite.current;
      await azurite.current.put('models', { [`${prefix}/model.bin`]: content });
      const port = await reach(Number(new URL(url).port));
      const endpoint = `http://127.0.0.1:${port}`;
      return {
        uri: `${endpoint}/${account}/models/${prefix}`,
        endpoint: `127.0.0.1:${port}`,
        flags: { 'azure-blob-endpoint': endpoint },
        env: { AZURE_STORAGE_ACCESS_KEY: accountKey },
      };
    },
  };
};
