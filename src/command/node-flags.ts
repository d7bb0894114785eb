/**
 * The Node.js flags the agent runs with: in its image (Dockerfile ENTRYPOINT) and as the npm bin (the `#!` line of
 * src/cli.ts); the benchmarks start it the same way. What each buys, measured with 1,000 models: docs/operating.md
 * (the Dockerfile's paragraph).
 *
 * `--max-semi-space-size=1` (MiB): V8's young generation may otherwise grow to 3 x 16 MiB during a sync and stay
 * that big, idle, for the pod's life; a flag of the process, since V8 sizes its heap at start-up. `--expose-gc`:
 * the heap a burst grew is given back once the loader is idle (heap-release.ts). `--no-memory-reducer`: with that,
 * V8's memory reducer only added full collections to an idle agent, on its own timers after a burst.
 * `--no-concurrent-recompilation`: V8 optimizes hot code on the main thread, not on its helper threads, whose
 * compiler allocations stayed in the process's memory once freed (malloc keeps a thread's arena): the agent port's
 * proxy idled at 83 MiB with them, 69 without (the Go agent: 65), twice each in `npm run bench -- proxy`; a burst of
 * 1,000 models took the same time and CPU (4.31 vs 4.38 s, 5.61 vs 5.63 CPU-s, same run conditions), idle RSS with
 * 1,000 models 0.82 of the floor's (0.85-0.87 before). What it costs (stop 52): the compiles' pauses land on the
 * main thread, in the swaps that warm the code up: swap → load request max 22-24 ms with it, 6-15 without, p99 and
 * median a little higher (`npm run bench -- swap-to-load`, two runs each, interleaved); without it the proxy idled
 * at 80-84 MiB (69 with), 114-122 after its load (103), neither `MALLOC_ARENA_MAX=2` nor `--v8-pool-size=1` helping.
 * `--no-wasm-tier-up --no-wasm-dynamic-tiering` (both: either alone keeps tiering): undici parses HTTP in
 * WebAssembly (llhttp), and V8 recompiles its hot functions with its optimizing compiler after a few hundred
 * requests; that code and what compiling it left in the process's memory stay for good. With the two, llhttp runs
 * as V8's baseline compiler (Liftoff) made it: idle RSS with 1,000 models 89-90 MiB instead of 100-101, the floor
 * watcher's 102-105 and 96-106 in the same runs (two runs each of `npm run bench -- idle-restart`); a process that
 * made 300 requests 66 MiB instead of 76. What it costs: 1,000 models in one swap took 2-4 % more of the Go agent's
 * time and CPU (2.70-2.74x vs 2.61-2.67x, 2.79-2.85x vs 2.64-2.73x, two interleaved runs each), a 1 KiB request
 * 0-6 % more CPU. `--liftoff-only` does the same but is a flag for testing, and fails a function Liftoff cannot compile
 * rather than handing it to the optimizing compiler.
 *
 * Not taken: `--optimize-for-size` (Node 24) took idle RSS 125 -> 101 MiB and heapUsed 38 -> 17 MiB, but 1,000 Adds
 * ran 20 % slower and one change at 20,000 models took twice as long (P7 92 -> 161-182 ms), two runs each.
 */
export const agentNodeFlags: ReadonlyArray<string> = [
  '--max-semi-space-size=1',
  '--expose-gc',
  '--no-memory-reducer',
  '--no-concurrent-recompilation',
  '--no-wasm-tier-up',
  '--no-wasm-dynamic-tiering',
];
