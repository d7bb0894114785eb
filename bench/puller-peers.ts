/**
 * modelsync, the KServe Go agent's puller and the floor watcher as peers on the same work: each on a config dir and a
 * model dir of its own, each loading into a V2 stand-in at 127.0.0.1:8080 (where the Go puller always loads: only in
 * the bench's own network namespace, see kserve-agent.ts), and each one's CPU read from /proc.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { sleep } from '../src/testing/wait';
import { startAgentProcess, startFloorProcess, stopProcess } from './agent-fixture';
import { inOwnNetwork, kserveAgentServerPort, startKserveAgent } from './kserve-agent';

/**
 * Who pulls: modelsync (node src/cli.js, as its image runs it), the KServe Go agent (`--enable-puller`), or the floor
 * watcher (bench/floor-watcher.ts: the least a Node.js sidecar can do, no checks, no durability), or that watcher
 * with `--crash-safe` (the least a crash-safe one can do: staging dir, marker, rename, journal line, log line).
 */
export type PullerName = 'modelsync' | 'kserve-agent' | 'floor' | 'floor-crash-safe';

/** A running puller: its process id, and how to end it. */
export interface RunningPuller {
  readonly name: PullerName;
  readonly pid: number;
  /** The last lines it wrote, for an error message. */
  readonly transcript: () => string;
  readonly stop: () => Promise<void>;
}

/**
 * The port the stand-in model server of `name` listens on: the Go puller's fixed one for both (the same server
 * for both peers), or a free one when the bench cannot have 8080.
 */
export const standInPort = (): number => (inOwnNetwork() ? kserveAgentServerPort : 0);

/** Pause after the Go agent's port opens: its watcher is armed by a goroutine started after the initial sync. */
const goWatchArmMs = 300;

/**
 * Starts `name` on `configDir` and `modelDir`, loading into `serverUrl` (the Go puller ignores it: it always loads
 * at localhost:8080), and resolves once it watches: modelsync's `ready` line, the floor's `watching`, the Go agent's
 * open port.
 */
export const startPuller = async (
  name: PullerName,
  configDir: string,
  modelDir: string,
  serverUrl: string,
  extraArgs: ReadonlyArray<string> = [],
): Promise<RunningPuller> => {
  if (name === 'kserve-agent') {
    const agent = await startKserveAgent([
      '--enable-puller',
      ...['--config-dir', configDir, '--model-dir', modelDir],
      ...['--component-port', String(kserveAgentServerPort)],
    ]);
    await sleep(goWatchArmMs);
    return {
      name,
      pid: agent.pid,
      transcript: () => '(the Go agent keeps its stderr)',
      stop: async () => {
        agent.stop();
        await agent.exited;
      },
    };
  }
  const agent =
    name === 'floor' || name === 'floor-crash-safe'
      ? startFloorProcess(configDir, modelDir, serverUrl, { crashSafe: name === 'floor-crash-safe' })
      : startAgentProcess([
          ...['--config-dir', configDir, '--model-dir', modelDir, '--server-url', serverUrl],
          ...extraArgs,
        ]);
  await agent.waitForLog(name === 'modelsync' ? 'start-up sync complete; ready' : 'watching', 60_000);
  return {
    name,
    pid: agent.child.pid!,
    transcript: () => agent.transcript(10),
    stop: () => stopProcess(agent),
  };
};

let clockTicks: number | undefined;

/** User + system CPU seconds `pid` has used so far (all its threads), from /proc/<pid>/stat. */
export const cpuSecondsOf = (pid: number): number => {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks; // fields 14 and 15: utime, stime
};
