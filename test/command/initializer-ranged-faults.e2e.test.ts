/**
 * The storage initializer on the real process against every fault a ranged download can meet: whatever a ranged
 * read gets (a status, a cut, a stall, a head or framing no server may send, the wrong bytes), the process ends
 * honestly — exit 0 with the whole file byte for byte, or exit ≠ 0 with one error line and no file in dest.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { withTimeout } from '../../src/testing/wait';
import { cliArgs, killAllCli, startCli } from '../helpers/cli-process';
import { useHttpServers } from '../helpers/http-servers';
import { atLeast } from '../helpers/log-sink';
import { faultServer } from '../helpers/range-fault-server';
import { rangeFaults, type RangeFault } from '../helpers/range-faults';
import { compareFile, mebibyte, stampedBytes } from '../helpers/ranged-sync';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('initializer-ranged-faults');
const serve = useHttpServers();

// 40 MiB: over the 32 MiB from which a file is fetched in ranges; 10 ranges of 4 MiB over 8 connections.
const size = 40 * mebibyte;
let file: Buffer;
beforeAll(() => {
  file = stampedBytes(size, 'v1');
});

/**
 * Retries and limits small enough that every fault ends in seconds, whatever it is. Where only the first ranged
 * read is faulted, the retry that must then succeed gets room for a slow machine: a busy CPU can stall a sound read
 * past a one-second deadline, and that says nothing about the fault.
 */
const flagsFor = (when: 'every' | 'first'): string[] =>
  cliArgs({
    'max-attempts': when === 'every' ? 2 : 4,
    'retry-base-ms': 10,
    'retry-max-ms': 50,
    'request-timeout-ms': when === 'every' ? 1000 : 10_000,
    'min-download-rate': '64Ki',
    'min-rate-window-ms': when === 'every' ? 1000 : 5000,
  });

/** The error line a run ended with, for a verdict that needs it. */
const shown = (line: object | undefined): string =>
  line === undefined ? '' : `: ${JSON.stringify(line).slice(0, 600)}`;

/** How one run ended, in words: `honest` or what was not. */
type Verdict = string;

/**
 * Runs `modelsync <uri> <dest>` against a server playing `fault` `when` and says whether it ended honestly: exit 0
 * with the whole file byte for byte (and, where `mustPass`, nothing else), or exit 1 with one error line naming the
 * URI and nothing left in dest; never a crash trace on stderr.
 */
const initializeAgainst = async (
  fault: RangeFault,
  when: 'every' | 'first',
  dest: string,
  mustPass: boolean,
): Promise<Verdict> => {
  let origin = '';
  const server = faultServer(file, { fault, when, firstGetBytesPerSecond: 8e6 }, () => origin);
  const { url } = await serve(server.handle);
  origin = url;
  const cli = startCli([...flagsFor(when), `${url}/weights.bin`, dest]);
  const { code } = await withTimeout(
    cli.exited,
    120_000,
    () => `the initializer to exit\n${cli.transcript()}`,
  );
  const entries = await readdir(dest).catch(() => []);
  const errorLines = cli.logs.filter(
    (line) => line.msg.startsWith('cannot download') || atLeast('error')(line),
  );
  const problems: string[] = [];
  if (server.log.faulted === 0) problems.push('no ranged read was made');
  if (cli.otherLines.length > 0)
    problems.push(`stderr holds lines that are no log lines: ${cli.otherLines[0]}`);
  if (code === 0) {
    if (errorLines.length > 0) problems.push(`exit 0 with an error line: ${errorLines[0]!.msg}`);
    if (entries.join() !== 'weights.bin') problems.push(`exit 0 with dest holding [${entries.join(', ')}]`);
    else {
      const compared = await compareFile(join(dest, 'weights.bin'), file);
      if (compared !== 'identical') problems.push(`exit 0 with a file that ${compared}`);
    }
  } else {
    if (mustPass) problems.push(`exit ${code} where the fault was transient ${shown(errorLines[0])}`);
    if (code !== 1) problems.push(`exit ${code}, not 1`);
    if (errorLines.length !== 1) problems.push(`${errorLines.length} error lines, not 1`);
    else if (!/^cannot download http:\/\/127\.0\.0\.1:\d+\/weights\.bin to /.test(errorLines[0]!.msg))
      problems.push(`an error line that names no URI: ${errorLines[0]!.msg}`);
    if (entries.length > 0) problems.push(`exit ${code} with dest holding [${entries.join(', ')}]`);
  }
  return problems.length === 0 ? 'honest' : problems.join('; ');
};

/** Plays every fault `when`, four initializers at a time, and says how each ended, by fault. */
const verdicts = async (when: 'every' | 'first'): Promise<Record<string, Verdict>> => {
  const endings: Array<readonly [string, Verdict]> = [];
  const queue = rangeFaults.map((fault, index) => ({ fault, index }));
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const dest = join(tmp.path, `${when}-${next.index}`, 'mnt', 'models');
      const mustPass = when === 'first' && next.fault.passes === true;
      endings.push([next.fault.name, await initializeAgainst(next.fault, when, dest, mustPass)]);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return Object.fromEntries(endings);
};

const allHonest = (): Record<string, Verdict> =>
  Object.fromEntries(rangeFaults.map((fault) => [fault.name, 'honest']));

describe('modelsync <uri> <dest> against a ranged read that fails', () => {
  it(`ends honestly, exit 1 and one error line or the whole file, when every ranged read gets any of ${rangeFaults.length} faults`, async () => {
    expect(await verdicts('every')).toEqual(allHonest());
  }, 600_000);

  it('ends honestly, with the whole file where the fault is transient, when only the first ranged read gets it', async () => {
    expect(await verdicts('first')).toEqual(allHonest());
  }, 600_000);
});
