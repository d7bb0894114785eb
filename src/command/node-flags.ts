/**
 * The Node.js flags the agent runs with: in its image (Dockerfile ENTRYPOINT) and as the npm bin (the `#!` line of
 * src/cli.ts); the benchmarks start it the same way.
 */

/**
 * `--max-semi-space-size=1` (MiB): V8's young generation may otherwise grow to 3 x 16 MiB during a sync and stays
 * that big, idle, for the pod's life. Measured with 1,000 models loaded, then idle (npm run bench idle-restart):
 * RSS 126 -> 79-86 MiB (the floor watcher: 107), heapUsed 38 -> 18 MiB; 2,000 Adds ran no slower (within the
 * run-to-run spread). A flag of the process, not settable from inside it: V8 sizes its heap at start-up.
 * On Node 24, `--optimize-for-size` as well took idle RSS 125 -> 101 MiB (the floor watcher's: 130) and
 * heapUsed 38 -> 17 MiB, but 1,000 Adds ran 20 % slower (P3 0.34-0.40 -> 0.24-0.32 of the floor) and one
 * change at 20,000 models took twice as long (P7 92 -> 161-182 ms), two runs each: not taken.
 *
 * `--expose-gc`: the heap a burst grew is given back once the loader is idle (heap-release.ts), where V8 would
 * keep it 100 s or more. 1,000 models loaded, then idle: RSS 133 -> 109-112 MiB (the floor watcher: 128), heapUsed
 * 22.7 -> 18-19 MiB, for one 40 ms collection after the burst and nothing while idle.
 *
 * `--no-memory-reducer`: with the heap given back by the agent itself, V8's memory reducer only added full
 * collections to an idle agent (it runs them on its own timers after a burst). Idle CPU with 1,000 models over a
 * minute holding one resync: 61 -> 15 ms/min as a sidecar, 73 -> 32 as the KServe drop-in (the floor watcher, with
 * its reducer: 23-26); RSS 112 -> 111 MiB, heapUsed 18.6 -> 18.8 (npm run bench -- --full idle-restart).
 */
export const agentNodeFlags: ReadonlyArray<string> = [
  '--max-semi-space-size=1',
  '--expose-gc',
  '--no-memory-reducer',
];
