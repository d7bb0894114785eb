// Rewrites the flags table of docs/operating.md from the flag table (src/core/flags/flag-table.ts); run after a build.
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { flagDocsMarkers, withFlagDocs } = require('../dist/core/flags/flag-docs');

const file = join(__dirname, '..', 'docs', 'operating.md');
const before = readFileSync(file, 'utf8');
const after = withFlagDocs(before);
if (after === before && !before.includes(flagDocsMarkers.begin)) {
  console.error(`docs-flags: ${file} has no ${flagDocsMarkers.begin} … ${flagDocsMarkers.end} markers`);
  process.exit(1);
}
writeFileSync(file, after);
console.log(
  after === before ? 'docs-flags: already up to date' : `docs-flags: rewrote the flags table of ${file}`,
);
