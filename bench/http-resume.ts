/** Suite http-resume: a 1 GiB http download cut at 90 %, resumed with Range/If-Range, vs the same download uncut. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startHttpServer } from '../src/testing/http-server';
import { rangedBody, type RangedBody } from '../src/testing/ranged-body';
import type { DriverReport } from './download-driver';
import {
  round3,
  runChildForReport,
  skipUnlessFree,
  summarize,
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
const variants = ['uncut', 'cut at 90 %'] as const;
type ResumeVariant = (typeof variants)[number];

/** Bytes the server sent for the requests from index `from` on: whole bodies, or the rest after a range start. */
const bytesServed = (body: RangedBody, from: number, bodyBytes: number): number =>
  body.requests
    .slice(from)
    .reduce(
      (sum, request) => sum + bodyBytes - Number(/^bytes=(\d+)-$/.exec(request.range ?? '')?.[1] ?? 0),
      0,
    );

/** The http-resume suite. */
export const httpResumeSuite: Suite = {
  name: 'http-resume',
  description:
    'Time to download 1 GiB over loopback http with httpStorage when the connection is closed at 90 % of the ' +
    'body (resumed with Range/If-Range on the ETag) vs the same download uncut; each run in its own child process.',
  run: async ({ quick }: RunOptions): Promise<SuiteResult> => {
    const bodyBytes = quick ? quickBytes : fullBytes;
    const cutAt = Math.floor(bodyBytes * 0.9);
    const noRoom = skipUnlessFree('http-resume', minFreeBytes);
    if (noRoom !== undefined) return noRoom;
    const body = rangedBody({ size: bodyBytes });
    const server = await startHttpServer(body.handle);
    const root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-bench-resume-'));
    const seconds = new Map<ResumeVariant, number[]>(variants.map((variant) => [variant, []]));
    const served = new Map<ResumeVariant, number[]>(variants.map((variant) => [variant, []]));
    try {
      for (let run = 0; run < runsPerVariant; run++) {
        for (const variant of variants) {
          const dir = path.join(root, `run-${run}-${variants.indexOf(variant)}`);
          mkdirSync(dir);
          if (variant !== 'uncut') body.cutAt(cutAt);
          const before = body.requests.length;
          try {
            const report = await runChildForReport<DriverReport>(
              path.join(__dirname, 'download-driver.js'),
              ['httpStorage', `${server.url}/model.bin`, dir],
              childTimeoutMs,
              `${variant} child`,
            );
            if (report.bytes !== bodyBytes) throw new Error(`${variant} wrote ${report.bytes} bytes`);
            seconds.get(variant)!.push(report.seconds);
            served.get(variant)!.push(bytesServed(body, before, bodyBytes));
            console.log(`  ${variant} run ${run + 1}: ${report.seconds.toFixed(2)} s`);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
      await server.close();
    }
    const uncut = summarize(seconds.get('uncut')!).median;
    const rows: Row[] = variants.map((variant) => {
      const time = summarize(seconds.get(variant)!);
      return {
        variant,
        runs: time.runs,
        medianSeconds: round3(time.median),
        minSeconds: round3(time.min),
        maxSeconds: round3(time.max),
        vsUncut: round3(time.median / uncut),
        medianMiBServed: round3(summarize(served.get(variant)!).median / MiB),
      };
    });
    return {
      rows,
      notes: [
        `The server closes the connection once ${cutAt} bytes (90 %) are written; the client resumes from the ` +
          'bytes that reached its consumer (bytes in flight are dropped with the connection) after a 100 ms pause.',
        `medianMiBServed: bytes the server sent per download: about ${bodyBytes / MiB} + the few MiB in flight ` +
          `at the cut, where a restart from 0 would be ${bodyBytes / MiB} + ${Math.round(cutAt / MiB)}. ` +
          'vsUncut: median seconds / the uncut median.',
        'S3: the same cut over a 64-object model, resumed with ranged GetObjects, is a row of s3-download.',
      ],
    };
  },
};
