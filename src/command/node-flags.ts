/**
 * The Node.js flags the agent runs with: in its image (Dockerfile ENTRYPOINT) and as the npm bin (the `#!` line of
 * src/cli.ts); the benchmarks start it the same way.
 */

/**
 * `--max-semi-space-size=1` (MiB): V8's young generation may otherwise grow to 3 x 16 MiB during a sync and stays
 * that big, idle, for the pod's life. Measured with 1,000 models loaded, then idle (npm run bench idle-restart):
 * RSS 126 -> 79-86 MiB (the floor watcher: 107), heapUsed 38 -> 18 MiB; 2,000 Adds ran no slower (within the
 * run-to-run spread). A flag of the process, not settable from inside it: V8 sizes its heap at start-up.
 * On Node 24 `--optimize-for-size` would take idle RSS 117 -> 103 MiB but slowed single changes at 20,000
 * models (P7) 72 -> 129 ms: not taken.
 */
export const agentNodeFlags: ReadonlyArray<string> = ['--max-semi-space-size=1'];
