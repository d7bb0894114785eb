/** Suite s3-download: a 1 GiB (quick: 256 MiB) model of 64 objects from s3rver vs the same bytes over http; and cut at 90 %. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHttpServer, writeRepeated } from '../src/testing/http-server';
import { startS3Server } from '../test/helpers/s3-server';
import { startTcpRelay } from '../test/helpers/tcp-relay';
import type { DriverReport } from './download-driver';
import { round3, runChildForReport, skipUnlessFree, summarize } from './suite';
import type { Row, RunOptions, Suite, SuiteResult } from './suite';

const MiB = 2 ** 20;
const GiB = 2 ** 30;
const objectCount = 64;
const fullModelBytes = GiB;
// Quick: still above the RSS budget, so a model held in memory fails the check in either mode.
const quickModelBytes = 256 * MiB;
// s3rver keeps its objects on disk (1 GiB), each run writes 1 GiB more before it is deleted.
const minFreeBytes = 4 * GiB;
const runsPerVariant = 3;
// A quarter of the full model: whatever the objects in flight buffer, a model held in memory would pass it 4 times over.
const rssBudgetMiB = 256;
const childTimeoutMs = 180_000;
const variants = ['http', 's3', 's3 via relay', 's3 via relay, cut at 90 %'] as const;
type S3Variant = (typeof variants)[number];

const mbPerSecond = (report: DriverReport): number => report.bytes / 1e6 / report.seconds;

/** The s3-download suite. */
export const s3DownloadSuite: Suite = {
  name: 's3-download',
  description:
    `A 1 GiB (quick: 256 MiB) model of ${objectCount} objects of 16 MiB (quick: 4 MiB) downloaded by s3Storage from s3rver on 127.0.0.1 ` +
    '(8 objects in flight), vs the same bytes as one body by httpStorage from a node:http server; and the S3 ' +
    'download through a TCP relay, uncut and with every connection dropped once 90 % of the bytes have been ' +
    'sent (each cut object resumed with a ranged GetObject). Each run in its own child process.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    const objectBytes = (quick ? quickModelBytes : fullModelBytes) / objectCount;
    const modelBytes = objectCount * objectBytes;
    const cutAt = Math.floor(modelBytes * 0.9);
    const noRoom = skipUnlessFree('s3-download', minFreeBytes);
    if (noRoom !== undefined) return noRoom;
    const block = randomBytes(objectBytes);
    const http = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'content-length': String(modelBytes) });
      writeRepeated(response, block, modelBytes);
    });
    const s3 = await startS3Server();
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-s3-'));
    let cutFrom: number | undefined;
    // The cut needs a relay in front of s3rver (every connection dropped at once, as a network failure would); it
    // runs in this process, so the uncut download is measured through it too, and directly.
    const relay = await startTcpRelay(s3.port, {
      onServerBytes: (total) => {
        if (cutFrom === undefined || total - cutFrom < cutAt) return;
        cutFrom = undefined;
        relay.dropAll();
      },
    });
    const reports = new Map<S3Variant, DriverReport[]>(variants.map((variant) => [variant, []]));
    const served = new Map<S3Variant, number[]>(variants.map((variant) => [variant, []]));
    try {
      const filling = performance.now();
      await s3.createBucket('bench');
      const keys = Array.from(
        { length: objectCount },
        (_, i) => `model/part-${String(i).padStart(2, '0')}.bin`,
      );
      for (let at = 0; at < keys.length; at += 8) {
        await s3.put('bench', Object.fromEntries(keys.slice(at, at + 8).map((key) => [key, block])));
      }
      console.log(`  s3rver filled in ${((performance.now() - filling) / 1000).toFixed(1)} s`);
      for (let run = 0; run < runsPerVariant; run++) {
        for (const variant of variants) {
          const dir = path.join(root, `run-${run}-${variants.indexOf(variant)}`);
          mkdirSync(dir);
          const before = relay.bytesFromServer;
          if (variant === 's3 via relay, cut at 90 %') cutFrom = before;
          const s3Port = variant.includes('relay') ? relay.port : s3.port;
          try {
            const report = await runChildForReport<DriverReport>(
              path.join(__dirname, 'download-driver.js'),
              variant === 'http'
                ? ['httpStorage', `${http.url}/model.bin`, dir]
                : ['s3Storage', 's3://bench/model', dir, `http://127.0.0.1:${s3Port}`],
              childTimeoutMs,
              `${variant} child`,
              {
                AWS_ACCESS_KEY_ID: s3.keys.accessKeyId,
                AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey,
                AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
              },
            );
            if (report.bytes !== modelBytes) throw new Error(`${variant} wrote ${report.bytes} bytes`);
            if (cutFrom !== undefined) throw new Error(`${variant}: the cut never came`);
            reports.get(variant)!.push(report);
            served.get(variant)!.push(relay.bytesFromServer - before);
            console.log(`  ${variant} run ${run + 1}: ${report.seconds.toFixed(2)} s`);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
      await Promise.all([relay.close(), http.close(), s3.close()]);
    }
    const medianOf = (variant: S3Variant, figure: (report: DriverReport) => number): number =>
      summarize(reports.get(variant)!.map(figure)).median;
    const rows: Row[] = variants.map((variant) => {
      const peakRss = summarize(reports.get(variant)!.map((report) => report.peakRssBytes / MiB));
      return {
        variant,
        objects: variant === 'http' ? 1 : objectCount,
        runs: reports.get(variant)!.length,
        medianSeconds: round3(medianOf(variant, (report) => report.seconds)),
        medianMBps: round3(medianOf(variant, mbPerSecond)),
        vsHttp: round3(medianOf(variant, mbPerSecond) / medianOf('http', mbPerSecond)),
        vsUncut: variant.includes('relay')
          ? round3(medianOf(variant, (r) => r.seconds) / medianOf('s3 via relay', (r) => r.seconds))
          : null,
        medianMiBServed: variant.includes('relay')
          ? round3(summarize(served.get(variant)!).median / MiB)
          : null,
        peakRssMiBMedian: peakRss.median,
        peakRssMiBMax: peakRss.max,
        maxRssMiBMax: summarize(reports.get(variant)!.map((report) => report.maxRssBytes / MiB)).max,
      };
    });
    const s3PeakRssMiB = Math.max(
      ...variants
        .slice(1)
        .flatMap((variant) => reports.get(variant)!)
        .map((report) => report.peakRssBytes / MiB),
    );
    return {
      rows,
      checks: [
        {
          name: `an S3 model of ${modelBytes / MiB} MiB is streamed, never held: peak RSS under ${rssBudgetMiB} MiB`,
          withinBudget: s3PeakRssMiB < rssBudgetMiB,
          peakRssMiB: round3(s3PeakRssMiB),
        },
      ],
      notes: [
        `MB/s: 10^6 bytes per second of wall time in the child, from the first request to the last write ` +
          `(${modelBytes} bytes in the dir, checked). vsHttp: median MB/s / http's; vsUncut: median seconds / ` +
          "the uncut download's through the relay.",
        "The relay (test/helpers/tcp-relay.ts, in the bench process) passes s3rver's bytes on and counts them " +
          '(medianMiBServed, headers included); the cut drops every connection once ' +
          `${cutAt} bytes have been sent: a restart from 0 would serve ${modelBytes / MiB} + ` +
          `${Math.round(cutAt / MiB)} MiB.`,
        'peakRss: highest child RSS sampled every 50 ms; maxRss: process.resourceUsage().maxRSS at the end.',
        's3rver serves each object from a file on disk through Koa: its own speed, not the AWS SDK, bounds the S3 ' +
          'rows; the figure to read is memory (streamed, not held) and the cost of the cut.',
      ],
    };
  },
};
