/** Child process of the download suites: one download one way, reporting its bytes, speed and memory over IPC. */
import { closeSync, createWriteStream, fsyncSync, openSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { sampleRss, type RssFigures } from './rss';

/** How the child downloads: plain fetch + pipeline, modelsync's httpStorage, or its s3Storage. */
export type Variant = 'baseline' | 'httpStorage' | 's3Storage';

const variants: ReadonlyArray<string> = ['baseline', 'httpStorage', 's3Storage'];

/** What the child reports to the suite; its RSS figures start when it is ready, before the download. */
export interface DriverReport extends RssFigures {
  /** The bytes of every file the download left in its dir. */
  readonly bytes: number;
  readonly seconds: number;
}

const baseline = async (url: string, dir: string): Promise<void> => {
  const response = await fetch(url);
  if (!response.ok || response.body === null) throw new Error(`GET ${url}: ${response.status}`);
  const to = path.join(dir, 'model.bin');
  await pipeline(Readable.fromWeb(response.body as ReadableStream<Uint8Array>), createWriteStream(to));
};

// Loaded in the functions, not at the top, so the baseline child's memory does not include modelsync's modules.
const viaHttpStorage = async (url: string, dir: string): Promise<void> => {
  const { httpStorage } = await import('../src/storage/http/http-storage.js');
  await httpStorage().download(url, dir, new AbortController().signal);
};

/** `uri` from the S3 server at `endpoint` (path style), with the keys in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY. */
const viaS3Storage = async (uri: string, dir: string, endpoint: string | undefined): Promise<void> => {
  if (endpoint === undefined) throw new Error('s3Storage needs an endpoint');
  const { s3Storage } = await import('../src/storage/object-store/s3.js');
  const { s3Credentials } = await import('../src/storage/object-store/s3-credentials.js');
  const storage = s3Storage({
    endpoint,
    region: 'us-east-1',
    addressing: 'path',
    credentials: s3Credentials({ anonymous: false }, process.env),
  });
  await storage.download(uri, dir, new AbortController().signal);
};

const filesIn = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => path.join(dir, name))
    .filter((file) => statSync(file).isFile());

const bytesIn = (dir: string): number => filesIn(dir).reduce((sum, file) => sum + statSync(file).size, 0);

// As the floor's `curl -o` + `sync <file>`: the bytes on disk, not only in the page cache.
const fsyncFilesIn = (dir: string): void => {
  for (const file of filesIn(dir)) {
    const fd = openSync(file, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
};

const main = async (): Promise<void> => {
  const args = process.argv.slice(2);
  const [variant, url, dir, endpoint] = args.filter((arg) => arg !== '--fsync');
  if (url === undefined || dir === undefined || variant === undefined || !variants.includes(variant)) {
    throw new Error(
      'usage: download-driver baseline|httpStorage|s3Storage <url> <empty dir> [s3 endpoint] [--fsync]',
    );
  }
  const rss = sampleRss();
  const started = performance.now();
  if (variant === 'baseline') await baseline(url, dir);
  else if (variant === 'httpStorage') await viaHttpStorage(url, dir);
  else await viaS3Storage(url, dir, endpoint);
  if (args.includes('--fsync')) fsyncFilesIn(dir);
  const seconds = (performance.now() - started) / 1000;
  const report: DriverReport = { bytes: bytesIn(dir), seconds, ...rss.stop() };
  process.send!(report, () => process.disconnect());
};

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
