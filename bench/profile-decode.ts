/** Profiling driver, not a suite: `node --cpu-prof .bench-build/bench/profile-decode.js [models] [runs]`. */
import { configPair, decodeAndDiff, snapshotOfText } from './decode-diff';
import { timeRuns } from './suite';

const models = Number(process.argv[2] ?? 100_000);
const runs = Number(process.argv[3] ?? 10);
const pair = configPair(models);
const previous = snapshotOfText(pair.previousText);
const [samples] = timeRuns([() => decodeAndDiff(previous, pair.nextText)], 2, runs);
console.log(`${models} models, decodeConfig + diff: ${samples!.map((ms) => ms.toFixed(0)).join(' ')} ms`);
