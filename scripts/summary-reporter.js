// A jest reporter that ends the run with one plain line, "tests: N passed, N failed", which CI reads.
const { writeSync } = require('node:fs');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`;
    // Printed at exit so it comes after jest's own summary (written to stderr by the default reporter).
    process.once('exit', () => writeSync(2, line));
  }
}
module.exports = SummaryReporter;
