/** Suite initializer: the storage initializer's download of a 1 GiB http body vs the agent's download of the same. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHttpServer, writeRepeated } from '../src/testing/http-server';
import type { DriverReport } from './download-driver';
import type { InitializerVariant } from './initializer-driver';
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
// More runs than http-download's 3: the two ways differ by far less than a shared host's noise.
const runsPerVariant = 7;
const childTimeoutMs = 180_000;
/** The target: the initializer at least this share of the agent's MB/s for the same object. */
const minAgentShare = 0.9;
const variants: ReadonlyArray<InitializerVariant> = ['agent', 'initializer'];

const mbPerSecond = (report: DriverReport): number => report.bytes / 1e6 / report.seconds;

/** The initializer suite. */
export const initializerSuite: Suite = {
  name: 'initializer',
  description:
    'Throughput of the storage initializer (`modelsync <url> <dest>`: a staging dir inside dest, the router, ' +
    'renames into dest) vs the agent downloading the same 1 GiB (quick: 128 MiB) application/octet-stream body ' +
    "from a node:http server on 127.0.0.1 (its model dir's staging dir, the router, the commit); each run in its " +
    'own child process, interleaved.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    const bodyBytes = quick ? quickBytes : fullBytes;
    const noRoom = skipUnlessFree('initializer', minFreeBytes);
    if (noRoom !== undefined) return noRoom;
    const block = randomBytes(MiB);
    const server = await startHttpServer((_request, response) => {
      response.writeHead(200, {
        'content-length': String(bodyBytes),
        'content-type': 'application/octet-stream',
      });
      writeRepeated(response, block, bodyBytes);
    });
    const url = `${server.url}/model.bin`;
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-init-'));
    const reports = new Map(variants.map((variant) => [variant, [] as DriverReport[]]));
    try {
      // Interleaved, each going first every other round, so drift (page cache, writeback, a noisy neighbour)
      // spreads over both.
      for (let run = 0; run < runsPerVariant; run++) {
        for (const variant of run % 2 === 0 ? variants : [...variants].reverse()) {
          const dir = path.join(root, `${variant}-${run}`);
          mkdirSync(dir);
          try {
            const report = await runChildForReport<DriverReport>(
              path.join(__dirname, 'initializer-driver.js'),
              [variant, url, dir],
              childTimeoutMs,
              `${variant} child`,
            );
            if (report.bytes !== bodyBytes) throw new Error(`${variant} wrote ${report.bytes} bytes`);
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
    const speedOf = (variant: InitializerVariant) => summarize(reports.get(variant)!.map(mbPerSecond));
    const agentMedian = speedOf('agent').median;
    const rows: Row[] = variants.map((variant) => {
      const speed = speedOf(variant);
      const peakRss = summarize(reports.get(variant)!.map((report) => report.peakRssBytes / MiB));
      return {
        variant,
        runs: speed.runs,
        medianMBps: speed.median,
        minMBps: speed.min,
        maxMBps: speed.max,
        vsAgent: round3(speed.median / agentMedian),
        medianSeconds: round3(summarize(reports.get(variant)!.map((report) => report.seconds)).median),
        peakRssMiBMedian: peakRss.median,
      };
    });
    const ratio = round3(speedOf('initializer').median / agentMedian);
    const checks: Check[] = [
      {
        name: `initializer ≥ ${minAgentShare}x the agent's download of the same object`,
        withinBudget: ratio >= minAgentShare,
        ratio,
        better: 'higher',
      },
    ];
    return {
      rows,
      checks,
      notes: [
        `MB/s is 10^6 bytes per second of wall time in the child, from the start of the download to the file in ` +
          `place (${bodyBytes} bytes, size checked): for the agent, store.stage → download → staged.commit ` +
          "(marker, rename; the background flush off the clock, as it is off the agent's path to the load, but " +
          'awaited before the child exits); for ' +
          'the initializer, initializerMode to its exit (stale-staging check, staging dir, download, renames ' +
          "into dest, staging dir removed). Modules are loaded before the clock starts. vsAgent = median MB/s / the agent's.",
        'No fsync in either: both leave the bytes in the page cache, so the figure shows what each adds on top ' +
          'of the same router, not the disk.',
        `Files go to a temp dir under ${os.tmpdir()}, deleted after each run.`,
      ],
    };
  },
};
