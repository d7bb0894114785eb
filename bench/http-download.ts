/** Suite http-download: a 1 GiB download over loopback, `curl -o` + sync (the floor) and fetch vs httpStorage().download. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startHttpServer, writeRepeated, type RunningHttpServer } from '../src/testing/http-server';
import type { DriverReport, Variant } from './download-driver';
import {
  round3,
  runChildForReport,
  skipUnlessFree,
  summarize,
  type Check,
  type Row,
  type RunOptions,
  type Suite,
  type SuiteResult,
} from './suite';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const fullBytes = GiB;
const quickBytes = 128 * MiB;
const minFreeBytes = 3 * GiB;
const runsPerVariant = 3;
const childTimeoutMs = 180_000;
/** P4 targets: httpStorage at least this share of the floor's MB/s, and its peak RSS at most this. */
const minFloorShare = 0.9;
const maxPeakRssMiB = 150;
/** `curl -o` + `sync <file>` (the floor), or a child downloading one way then fsyncing the file. */
type Run = 'curl' | Variant;
const runs: ReadonlyArray<Run> = ['curl', 'baseline', 'httpStorage'];

const run = promisify(execFile);

/**
 * `curl -s -f -o <file> <url>` then `sync <file>`, timed from the parent (asynchronously: the server is in this
 * process); undefined when curl is not installed.
 */
const runCurl = async (url: string, dir: string): Promise<DriverReport | undefined> => {
  const file = path.join(dir, 'model.bin');
  const started = performance.now();
  try {
    await run('curl', ['-s', '-f', '-o', file, url]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  await run('sync', [file]);
  const seconds = (performance.now() - started) / 1000;
  return { bytes: statSync(file).size, seconds, startRssBytes: 0, peakRssBytes: 0, maxRssBytes: 0 };
};

/** Serves `/model.bin`: `bodyBytes` made of one random 1 MiB buffer repeated, written as fast as TCP drains. */
const startServer = (bodyBytes: number): Promise<RunningHttpServer> => {
  const block = randomBytes(MiB);
  return startHttpServer((request, response) => {
    if (request.url !== '/model.bin') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, {
      'content-length': String(bodyBytes),
      'content-type': 'application/octet-stream',
    });
    writeRepeated(response, block, bodyBytes);
  });
};

/** Runs the compiled driver in a child process, so its memory figures are one variant's alone. */
const runChild = (variant: Variant, url: string, dir: string): Promise<DriverReport> =>
  runChildForReport<DriverReport>(
    path.join(__dirname, 'download-driver.js'),
    [variant, url, dir, '--fsync'],
    childTimeoutMs,
    `${variant} child`,
  );

const mbPerSecond = (report: DriverReport): number => report.bytes / 1e6 / report.seconds;

/** The http-download suite. */
export const httpDownloadSuite: Suite = {
  name: 'http-download',
  description:
    'Throughput and peak memory of downloading a 1 GiB (quick: 128 MiB) application/octet-stream body from a ' +
    'node:http server on 127.0.0.1 to a file on disk: `curl -o` + `sync` as the floor, fetch + ' +
    'stream.pipeline(Readable.fromWeb(body), createWriteStream) + fsync, vs httpStorage().download + fsync; ' +
    'each node run in its own child process.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    const bodyBytes = quick ? quickBytes : fullBytes;
    const noRoom = skipUnlessFree('http-download', minFreeBytes);
    if (noRoom !== undefined) return noRoom;
    const server = await startServer(bodyBytes);
    const url = `${server.url}/model.bin`;
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-'));
    let variants = runs;
    const reports = new Map<Run, DriverReport[]>(variants.map((variant) => [variant, []]));
    try {
      // Interleaved, so drift (page cache, a noisy neighbour) spreads over every variant.
      for (let run = 0; run < runsPerVariant; run++) {
        for (const variant of variants) {
          const dir = path.join(root, `${variant}-${run}`);
          mkdirSync(dir);
          try {
            const report = variant === 'curl' ? await runCurl(url, dir) : await runChild(variant, url, dir);
            if (report === undefined) {
              console.log('  curl is not installed: the fetch baseline is the floor');
              variants = variants.filter((v) => v !== 'curl');
              continue;
            }
            if (report.bytes !== bodyBytes) {
              throw new Error(`${variant} wrote ${report.bytes} bytes, expected ${bodyBytes}`);
            }
            console.log(`  ${variant} run ${run + 1}: ${mbPerSecond(report).toFixed(0)} MB/s`);
            reports.get(variant)!.push(report);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
      await server.close();
    }
    const medianOf = (variant: Run, figure: (report: DriverReport) => number): number =>
      summarize(reports.get(variant)!.map(figure)).median;
    const floor: Run = variants.includes('curl') ? 'curl' : 'baseline';
    const baselineMedian = medianOf(floor, mbPerSecond);
    const rows: Row[] = variants.map((variant) => {
      const speed = summarize(reports.get(variant)!.map(mbPerSecond));
      const peakRss = summarize(reports.get(variant)!.map((report) => report.peakRssBytes / MiB));
      const maxRss = summarize(reports.get(variant)!.map((report) => report.maxRssBytes / MiB));
      return {
        variant,
        runs: speed.runs,
        medianMBps: speed.median,
        minMBps: speed.min,
        maxMBps: speed.max,
        vsFloor: round3(speed.median / baselineMedian),
        medianSeconds: round3(medianOf(variant, (report) => report.seconds)),
        startRssMiB: round3(medianOf(variant, (report) => report.startRssBytes / MiB)),
        peakRssMiBMedian: peakRss.median,
        peakRssMiBMax: peakRss.max,
        maxRssMiBMedian: maxRss.median,
        maxRssMiBMax: maxRss.max,
      };
    });
    const mine = reports.get('httpStorage')!;
    const ratio = round3(medianOf('httpStorage', mbPerSecond) / baselineMedian);
    const peakRssMiB = round3(
      Math.max(...mine.map((report) => Math.max(report.peakRssBytes, report.maxRssBytes))) / MiB,
    );
    const checks: Check[] = [
      {
        name: `P4 httpStorage ≥ ${minFloorShare}x the floor (${floor === 'curl' ? 'curl -o + sync' : 'fetch + pipeline'})`,
        withinBudget: ratio >= minFloorShare,
        ratio,
        better: 'higher',
      },
      {
        name: `P4 httpStorage peak RSS ≤ ${maxPeakRssMiB} MiB`,
        withinBudget: peakRssMiB <= maxPeakRssMiB,
        peakRssMiB,
      },
    ];
    return {
      rows,
      checks,
      notes: [
        `MB/s is 10^6 bytes per second of wall time, from the request to the file flushed to disk ` +
          `(${bodyBytes} bytes, sizes checked): curl is timed from the parent (spawn of \`curl -s -f -o\` to the ` +
          'end of `sync <file>`), the node runs in their child (download, then fsync of the file). ' +
          "vsFloor = median MB/s / the floor's median MB/s (curl; fetch when curl is not installed).",
        'startRssMiB: child RSS before the download; peakRss: highest RSS sampled every 50 ms; ' +
          'maxRss: process.resourceUsage().maxRSS at the end; median and max over the runs (0 for curl: ' +
          'not measured). The P4 RSS check takes the highest of both over the httpStorage runs.',
        `Files go to a temp dir under ${os.tmpdir()}, deleted after each run.`,
      ],
    };
  },
};
