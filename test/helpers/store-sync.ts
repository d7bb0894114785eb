/**
 * For the per-store e2e tests: S3 (s3rver), GCS (the stand-in), Azure Blob (azurite) and the Hugging Face Hub (the
 * stand-in and its CDN), each reached through metered relays that log every request and count the bytes served,
 * and the real CLI in sync mode beside a V2 stand-in on a models.json the test can rewrite.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startGcsStandIn, type GcsStandIn } from '../../src/testing/gcs-stand-in';
import { startHubStandIn, type HubStandIn } from '../../src/testing/hub-stand-in';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { useAzurite } from './azurite';
import { cliArgs, startCli, type CliFlags, type CliProcess } from './cli-process';
import type { LogLine } from './log-sink';
import { useMeteredRelays, type MeteredRelay, type RelayedRequest } from './metered-relay';
import { startS3Server, type S3Server } from './s3-server';

/** A model's files: path below the model's prefix (or in its repo) → content. */
export type ModelFiles = Readonly<Record<string, string | Buffer>>;

/** How each relay in front of a store runs (default: as fast as the client reads). */
export interface RelayOptions {
  readonly bytesPerSecond?: number;
}

/** How the CLI reaches a store through the relays, and what the relays saw. */
export interface StoreReach {
  /** The storageUri of model `model`. */
  uri(model: string): string;
  readonly flags: CliFlags;
  readonly env: Readonly<Record<string, string>>;
  /** Every request through the relays, in the order each relay took them. */
  readonly requests: ReadonlyArray<RelayedRequest>;
  /** Bytes the store sent back through the relays, heads included. */
  readonly bytesServed: number;
  /**
   * The requests that name file `file` of model `model` (a read of its metadata or bytes, the Hub's resolve of it,
   * the CDN's read of its blob, which names every file of that content): a listing names only the prefix.
   */
  requestsFor(model: string, file: string): RelayedRequest[];
}

/** One store under test. */
export interface StoreUnderTest {
  readonly name: string;
  /** Stores model `model` as `files`: objects under `<model>/` of bucket `models`, or a new commit of `org/<model>`. */
  put(model: string, files: ModelFiles): Promise<void>;
  /** Starts relays in front of the store (closed after the test), each connection held to `bytesPerSecond`. */
  reach(options?: RelayOptions): Promise<StoreReach>;
}

const pathOf = (request: RelayedRequest): string => decodeURIComponent(request.target.split('?')[0]!);

/** A reach through one relay, where a request names a file when its path ends with `/<model>/<file>`. */
const objectStoreReach = (
  relay: MeteredRelay,
  reach: Pick<StoreReach, 'uri' | 'flags' | 'env'>,
): StoreReach => ({
  ...reach,
  requests: relay.requests,
  get bytesServed() {
    return relay.bytesToClients;
  },
  requestsFor: (model, file) =>
    relay.requests.filter((request) => pathOf(request).endsWith(`/${model}/${file}`)),
});

/**
 * For a test file: the four stores, started before its tests and stopped after them (the bucket or container
 * `models`; Hub repos under `org/`); each reach's relays are closed after its test.
 */
export const useStores = (): ReadonlyArray<StoreUnderTest> => {
  const relayTo = useMeteredRelays();
  const azurite = useAzurite();
  let s3: S3Server;
  let gcs: GcsStandIn;
  let hub: HubStandIn;
  // The sha256 of every file content put into the Hub, by `<model>/<file>`: the CDN serves blobs by it.
  const hubBlobs = new Map<string, Set<string>>();
  beforeAll(async () => {
    [s3, gcs, hub] = await Promise.all([startS3Server(), startGcsStandIn(), startHubStandIn()]);
    await s3.createBucket('models');
  }, 60_000);
  afterAll(async () => {
    await Promise.all([s3?.close(), gcs?.close(), hub?.close()]);
  });
  const under = (model: string, files: ModelFiles): Record<string, string | Buffer> =>
    Object.fromEntries(Object.entries(files).map(([file, data]) => [`${model}/${file}`, data]));
  const port = (url: string): number => Number(new URL(url).port);

  return [
    {
      name: 'S3 (s3rver)',
      put: (model, files) => s3.put('models', under(model, files)),
      reach: async (options) => {
        const relay = await relayTo(s3.port, options);
        return objectStoreReach(relay, {
          uri: (model) => `s3://models/${model}`,
          flags: {},
          env: {
            AWS_ENDPOINT_URL: relay.url,
            AWS_DEFAULT_REGION: 'us-east-1',
            AWS_ACCESS_KEY_ID: s3.keys.accessKeyId,
            AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey,
          },
        });
      },
    },
    {
      name: 'GCS (the stand-in)',
      put: (model, files) => {
        for (const [key, data] of Object.entries(under(model, files))) gcs.put('models', key, data);
        return Promise.resolve();
      },
      reach: async (options) => {
        const relay = await relayTo(port(gcs.url), options);
        return objectStoreReach(relay, {
          uri: (model) => `gs://models/${model}`,
          flags: { 'gcs-endpoint': relay.url },
          env: {},
        });
      },
    },
    {
      name: 'Azure Blob (azurite)',
      put: (model, files) => azurite.current.put('models', under(model, files)),
      reach: async (options) => {
        const relay = await relayTo(port(azurite.current.url), options);
        return objectStoreReach(relay, {
          uri: (model) => `${relay.url}/${azurite.current.account}/models/${model}`,
          flags: { 'azure-blob-endpoint': relay.url },
          env: { AZURE_STORAGE_ACCESS_KEY: azurite.current.accountKey },
        });
      },
    },
    {
      name: 'Hugging Face Hub (the stand-in)',
      put: (model, files) => {
        hub.createRepo(`org/${model}`);
        hub.commit(`org/${model}`, files);
        for (const [file, data] of Object.entries(files)) {
          const blobs = hubBlobs.get(`${model}/${file}`) ?? new Set();
          hubBlobs.set(`${model}/${file}`, blobs.add(createHash('sha256').update(data).digest('hex')));
        }
        return Promise.resolve();
      },
      reach: async (options) => {
        const [api, cdn] = await Promise.all([
          relayTo(port(hub.url), options),
          relayTo(port(hub.cdnUrl), options),
        ]);
        hub.serveCdnVia(cdn.url);
        // `/org/<model>/resolve/<revision>/<file>`.
        const resolves = (model: string, file: string) => (request: RelayedRequest) => {
          const parts = pathOf(request).split('/');
          return parts.slice(0, 4).join('/') === `/org/${model}/resolve` && parts.slice(5).join('/') === file;
        };
        const blobOf = (model: string, file: string) => (request: RelayedRequest) =>
          hubBlobs.get(`${model}/${file}`)?.has(pathOf(request).split('/').pop()!) === true;
        return {
          uri: (model) => `hf://org/${model}`,
          flags: {},
          env: { HF_ENDPOINT: api.url },
          get requests() {
            return [...api.requests, ...cdn.requests];
          },
          get bytesServed() {
            return api.bytesToClients + cdn.bytesToClients;
          },
          requestsFor: (model, file) => [
            ...api.requests.filter(resolves(model, file)),
            ...cdn.requests.filter(blobOf(model, file)),
          ],
        };
      },
    },
  ];
};

/** One model of models.json. */
export interface ModelEntry {
  readonly modelName: string;
  readonly modelSpec: Readonly<Record<string, unknown>>;
}

/** A sync run: the CLI, the V2 stand-in it loads into, the model dir, and the models.json it reads. */
export interface StoreSyncRun {
  readonly cli: CliProcess;
  readonly standIn: V2ModelServerStandIn;
  readonly modelDir: string;
  /** Replaces models.json, as kubelet swaps a ConfigMap. */
  write(models: ReadonlyArray<ModelEntry>): void;
  /** The first `model loaded` line of `model` from log index `since` on. */
  loaded(model: string, since?: number): Promise<LogLine>;
  /** The first `model failed` line of `model` from log index `since` on. */
  failed(model: string, since?: number): Promise<LogLine>;
}

const timeoutMs = 40_000;

/**
 * For a test file: `start(dir, reach, models)` runs `node dist/cli.js` in sync mode in `dir` (config dir, model
 * dir) on `reach`'s flags and environment, beside a V2 stand-in closed after the test (the CLI is `killAllCli`'s,
 * declared by the file before its temp dir).
 */
export const useStoreSync = (): {
  readonly start: (
    dir: string,
    reach: StoreReach,
    models: ReadonlyArray<ModelEntry>,
    flags?: CliFlags,
  ) => Promise<StoreSyncRun>;
} => {
  const standIns: V2ModelServerStandIn[] = [];
  afterEach(async () => {
    await Promise.all(standIns.splice(0).map((standIn) => standIn.close()));
  });
  return {
    start: async (dir, reach, models, flags = {}) => {
      const configDir = join(dir, 'configs');
      const modelDir = join(dir, 'models');
      mkdirSync(modelDir);
      const standIn = await startV2ModelServer({ modelDir });
      standIns.push(standIn);
      const write = (entries: ReadonlyArray<ModelEntry>): void => {
        atomicWrite(configDir, { 'models.json': JSON.stringify(entries) });
      };
      write(models);
      const cli = startCli(
        cliArgs({
          'config-dir': configDir,
          'model-dir': modelDir,
          'server-url': standIn.url,
          'retry-base-ms': 200,
          'retry-max-ms': 1000,
          ...reach.flags,
          ...flags,
        }),
        { env: reach.env },
      );
      const phase = (msg: string) => (model: string, since?: number) =>
        cli.waitForLog((log) => log.msg === msg && log['model'] === model, timeoutMs, since);
      return { cli, standIn, modelDir, write, loaded: phase('model loaded'), failed: phase('model failed') };
    },
  };
};
