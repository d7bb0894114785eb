/** Child process of the http-download suite: one download one way, reporting its speed and memory over IPC. */
import { createWriteStream, fsyncSync, openSync, closeSync, statSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import { sampleRss, type RssFigures } from './rss';

/** How the child downloads: plain fetch + pipeline, or modelsync's httpStorage. */
export type Variant = 'baseline' | 'httpStorage';

/** What the child reports to the suite; its RSS figures start when it is ready, before the download. */
export interface DriverReport extends RssFigures {
  readonly bytes: number;
  readonly seconds: number;
}

const baseline = async (url: string, dir: string): Promise<string> => {
  const response = await fetch(url);
  if (!response.ok || response.body === null) throw new Error(`GET ${url}: ${response.status}`);
  const to = path.join(dir, 'model.bin');
  await pipeline(Readable.fromWeb(response.body as ReadableStream<Uint8Array>), createWriteStream(to));
  return to;
};

const viaHttpStorage = async (url: string, dir: string): Promise<string> => {
  // Loaded here, not at the top, so the baseline child's memory does not include modelsync's modules.
  const { httpStorage } = await import('../src/edge/storage-http');
  await httpStorage().download(url, dir, new AbortController().signal);
  return path.join(dir, 'model.bin');
};

const main = async (): Promise<void> => {
  const [variant, url, dir] = process.argv.slice(2);
  if (url === undefined || dir === undefined || (variant !== 'baseline' && variant !== 'httpStorage')) {
    throw new Error('usage: http-download-driver baseline|httpStorage <url> <empty dir> [--fsync]');
  }
  const rss = sampleRss();
  const started = performance.now();
  const file = await (variant === 'baseline' ? baseline(url, dir) : viaHttpStorage(url, dir));
  if (process.argv[5] === '--fsync') {
    // As the floor's `curl -o` + `sync <file>`: the bytes on disk, not only in the page cache.
    const fd = openSync(file, 'r');
    fsyncSync(fd);
    closeSync(fd);
  }
  const seconds = (performance.now() - started) / 1000;
  const report: DriverReport = { bytes: statSync(file).size, seconds, ...rss.stop() };
  process.send!(report, () => process.disconnect());
};

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
