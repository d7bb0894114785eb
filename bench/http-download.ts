/** Suite http-download: a 1 GiB download over loopback, plain fetch + pipeline vs httpStorage().download. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHttpServer, writeRepeated, type RunningHttpServer } from '../src/testing/http-server';
import type { DriverReport, Variant } from './download-driver';
import { round3, runChildForReport, skipUnlessFree, summarize } from './suite';
import type { Row, Suite, SuiteResult } from './suite';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const bodyBytes = GiB;
const minFreeBytes = 3 * GiB;
const runsPerVariant = 3;
const childTimeoutMs = 180_000;
const variants: ReadonlyArray<Variant> = ['baseline', 'httpStorage'];

/** Serves `/model.bin`: `bodyBytes` made of one random 1 MiB buffer repeated, written as fast as TCP drains. */
const startServer = (): Promise<RunningHttpServer> => {
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
    [variant, url, dir],
    childTimeoutMs,
    `${variant} child`,
  );

const mbPerSecond = (report: DriverReport): number => report.bytes / 1e6 / report.seconds;

/** The http-download suite. */
export const httpDownloadSuite: Suite = {
  name: 'http-download',
  description:
    'Throughput and peak memory of downloading a 1 GiB application/octet-stream body from a node:http ' +
    'server on 127.0.0.1 to a file: fetch + stream.pipeline(Readable.fromWeb(body), createWriteStream) ' +
    'as the baseline, vs httpStorage().download; each run in its own child process.',
  run: async (): Promise<SuiteResult> => {
    const noRoom = skipUnlessFree('http-download', minFreeBytes);
    if (noRoom !== undefined) return noRoom;
    const server = await startServer();
    const url = `${server.url}/model.bin`;
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-'));
    const reports = new Map<Variant, DriverReport[]>(variants.map((variant) => [variant, []]));
    try {
      // Interleaved, so drift (page cache, a noisy neighbour) spreads over both variants.
      for (let run = 0; run < runsPerVariant; run++) {
        for (const variant of variants) {
          const dir = path.join(root, `${variant}-${run}`);
          mkdirSync(dir);
          try {
            const report = await runChild(variant, url, dir);
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
    const medianOf = (variant: Variant, figure: (report: DriverReport) => number): number =>
      summarize(reports.get(variant)!.map(figure)).median;
    const baselineMedian = medianOf('baseline', mbPerSecond);
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
        vsBaseline: round3(speed.median / baselineMedian),
        medianSeconds: round3(medianOf(variant, (report) => report.seconds)),
        startRssMiB: round3(medianOf(variant, (report) => report.startRssBytes / MiB)),
        peakRssMiBMedian: peakRss.median,
        peakRssMiBMax: peakRss.max,
        maxRssMiBMedian: maxRss.median,
        maxRssMiBMax: maxRss.max,
      };
    });
    return {
      rows,
      notes: [
        `MB/s is 10^6 bytes per second of wall time in the child, from the request to the file's last write ` +
          `(${bodyBytes} bytes, sizes checked). vsBaseline = median MB/s / the baseline's median MB/s.`,
        'startRssMiB: child RSS before the download; peakRss: highest RSS sampled every 50 ms; ' +
          'maxRss: process.resourceUsage().maxRSS at the end; median and max over the runs.',
        `Files go to a temp dir under ${os.tmpdir()}, deleted after each run; with free RAM the writes land ` +
          'in the page cache, so this measures the download path rather than the disk.',
      ],
    };
  },
};
