/**
 * Preloaded (`NODE_OPTIONS=--require memory-probe.js`) into a process the idle suites measure: at SIGUSR2 it writes
 * `process.memoryUsage()` and `process.cpuUsage()` to `$BENCH_PROBE_FILE`, so heapUsed can be read from outside
 * without changing the process measured. It allocates nothing until asked.
 */
import { renameSync, writeFileSync } from 'node:fs';

const file = process.env['BENCH_PROBE_FILE'];
let seq = 0;
if (file !== undefined) {
  process.on('SIGUSR2', () => {
    const memory = process.memoryUsage();
    const cpu = process.cpuUsage();
    seq += 1;
    const reading = {
      rss: memory.rss,
      heapUsed: memory.heapUsed,
      heapTotal: memory.heapTotal,
      external: memory.external,
      cpuUserMicros: cpu.user,
      cpuSystemMicros: cpu.system,
      seq,
    };
    // Written then renamed, so the reader never sees half a reading.
    writeFileSync(`${file}.tmp`, JSON.stringify(reading));
    renameSync(`${file}.tmp`, file);
  });
}
