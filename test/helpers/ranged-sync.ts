/**
 * For the ranged-download e2e tests: big objects of a known, position-stamped pattern (a misplaced or mixed range
 * shows in the bytes), a byte-for-byte check of the saved file by hash, and the real CLI in sync mode beside a V2
 * stand-in, up to the model's load.
 */
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { waitFor } from '../../src/testing/wait';
import { cliArgs, startCli, type CliFlags, type CliProcess } from './cli-process';
import type { LogLine } from './log-sink';
import type { RelayCutMade, RelayedRequest } from './metered-relay';

export const mebibyte = 2 ** 20;

const recordBytes = 32;

/**
 * `size` bytes of 32-byte records, each `<version> <its own offset in hex>` padded and ended by a newline: every
 * record differs from every other, in place and across versions, so a range written at the wrong offset or taken
 * from another version changes the hash (and the first difference says which).
 */
export const stampedBytes = (size: number, version: string): Buffer => {
  const bytes = Buffer.alloc(size, ' ');
  for (let at = 0; at < size; at += recordBytes) {
    const record = `${version} ${at.toString(16).padStart(12, '0')}`.padEnd(recordBytes - 1, ' ') + '\n';
    bytes.write(record.slice(0, size - at), at, 'latin1');
  }
  return bytes;
};

export const sha256Of = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/**
 * `'identical'` when the file at `path` holds exactly `expected` (compared by hash, read 4 MiB at a time), else
 * where it first differs and what it holds there.
 */
export const compareFile = async (path: string, expected: Buffer): Promise<string> => {
  const hash = createHash('sha256');
  const file = await open(path, 'r');
  const chunk = Buffer.alloc(4 * mebibyte);
  let size = 0;
  let difference: string | undefined;
  try {
    for (;;) {
      const { bytesRead } = await file.read(chunk, 0, chunk.length, size);
      if (bytesRead === 0) break;
      const got = chunk.subarray(0, bytesRead);
      hash.update(got);
      if (difference === undefined) {
        const want = expected.subarray(size, size + bytesRead);
        const at = got.findIndex((byte, i) => byte !== want[i]);
        if (at !== -1) {
          const from = size + at - ((size + at) % recordBytes);
          const show = (bytes: Buffer): string => JSON.stringify(bytes.toString('latin1', 0, recordBytes));
          difference = `differs from byte ${size + at}: holds ${show(Buffer.from(got.subarray(from - size)))}, not ${show(expected.subarray(from))}`;
        }
      }
      size += bytesRead;
    }
  } finally {
    await file.close();
  }
  if (hash.digest('hex') === sha256Of(expected) && size === expected.length) return 'identical';
  return difference ?? `holds ${size} bytes, not ${expected.length}`;
};

/** The log lines of `cli` with message `msg` for `model`. */
export const logsOf = (cli: CliProcess, model: string, msg: string): LogLine[] =>
  cli.logs.filter((log) => log.msg === msg && log['model'] === model);

/** A sync run: the CLI, the V2 stand-in it loads into, and the model dir. */
export interface SyncRun {
  readonly cli: CliProcess;
  readonly standIn: V2ModelServerStandIn;
  readonly modelDir: string;
  /** Resolves once `model` is loaded (its load request answered 200 with its files complete) and logged so. */
  loaded(model: string, timeoutMs?: number): Promise<void>;
}

/** What a sync run serves: models (name → storageUri), extra flags and environment. */
export interface SyncSetup {
  readonly models: Readonly<Record<string, string>>;
  readonly flags?: CliFlags;
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * For a test file: `start(dir, setup)` runs `node dist/cli.js` in sync mode in `dir` (config dir, model dir) beside
 * a V2 stand-in, with retries 200 ms to 1 s apart; each stand-in is closed after its test (the CLI is
 * `killAllCli`'s, declared by the file before its temp dir).
 */
export const useSyncRuns = (): { readonly start: (dir: string, setup: SyncSetup) => Promise<SyncRun> } => {
  const standIns: V2ModelServerStandIn[] = [];
  afterEach(async () => {
    await Promise.all(standIns.splice(0).map((standIn) => standIn.close()));
  });
  return {
    start: async (dir, setup) => {
      const configDir = join(dir, 'configs');
      const modelDir = join(dir, 'models');
      mkdirSync(modelDir);
      const standIn = await startV2ModelServer({ modelDir });
      standIns.push(standIn);
      atomicWrite(configDir, {
        'models.json': JSON.stringify(
          Object.entries(setup.models).map(([modelName, storageUri]) => ({
            modelName,
            modelSpec: { storageUri },
          })),
        ),
      });
      const flags = {
        'config-dir': configDir,
        'model-dir': modelDir,
        'server-url': standIn.url,
        'retry-base-ms': 200,
        'retry-max-ms': 1000,
        ...setup.flags,
      };
      const cli = startCli(cliArgs(flags), setup.env === undefined ? {} : { env: setup.env });
      return {
        cli,
        standIn,
        modelDir,
        loaded: async (model, timeoutMs = 25_000) => {
          await waitFor(
            () => standIn.loads.some((load) => load.name === model && load.status === 200 && load.complete),
            timeoutMs,
            () => `${model} to be loaded\n${cli.transcript()}`,
          );
          await cli.waitForLog((log) => log.msg === 'model loaded' && log['model'] === model, 5000);
        },
      };
    },
  };
};

/** The byte ranges `[first, last]` the `ranges` of an object of `size` bytes cover together, merged and sorted. */
export const coverage = (
  ranges: ReadonlyArray<RelayedRequest['range']>,
  size: number,
): Array<[number, number]> => {
  const sorted = ranges
    .filter((range) => range !== undefined)
    .map(({ first, last }): [number, number] => [first, last ?? size - 1])
    .sort(([a], [b]) => a - b);
  const merged: Array<[number, number]> = [];
  for (const [first, last] of sorted) {
    const previous = merged[merged.length - 1];
    if (previous !== undefined && first <= previous[1] + 1) previous[1] = Math.max(previous[1], last);
    else merged.push([first, last]);
  }
  return merged;
};

/**
 * What the ranged reads (other than the cut one) did about the bytes a cut response had delivered: `resumedAt`,
 * the starts of reads that begin right after them (a resume); `fetchedAgain`, the reads that ask for any of them
 * again. A range resumed alone shows one of the first and none of the second.
 */
export const afterCut = (
  reads: ReadonlyArray<RelayedRequest>,
  made: RelayCutMade,
): { readonly resumedAt: number[]; readonly fetchedAgain: Array<RelayedRequest['range']> } => {
  // A cut answer to a request without a Range (the first GET) was delivering the file from its start.
  const first = made.request?.range?.first ?? 0;
  const end = first + made.bodyBytes;
  const others = reads.filter((read) => read !== made.request && read.range !== undefined);
  return {
    resumedAt: others.filter((read) => read.range!.first === end).map((read) => read.range!.first),
    fetchedAgain: others
      .filter((read) => read.range!.first < end && (read.range!.last ?? Infinity) >= first)
      .map((read) => read.range),
  };
};
