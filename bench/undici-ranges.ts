/**
 * The undici-only lane of P8, run as its own process: `node undici-ranges.js <url> <file> <bytes> [connections]`. A
 * minimal ranged reader on one undici Pool, each chunk written inline at its place, an idle connection taking half of
 * the widest range left (as modelsync's PartPlan): what any claim about modelsync's own client is checked against.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { Pool } from 'undici';

const [url = '', file = '', bytes = '0', connections = '8'] = process.argv.slice(2);
const { origin, pathname } = new URL(url);
const pool = new Pool(origin, { connections: Number(connections) });
const fd = openSync(file, 'w');
const [size, count] = [Number(bytes), Number(connections)];
type Range = { next: number; end: number };
const ranges: Range[] = Array.from({ length: count }, (_, i) => ({
  next: Math.floor((size * i) / count),
  end: Math.floor((size * (i + 1)) / count),
}));

const read = async (range: Range): Promise<void> => {
  while (range.next < range.end) {
    const headers = { range: `bytes=${range.next}-${range.end - 1}` };
    const { body } = await pool.request({ path: pathname, method: 'GET', headers });
    await new Promise<void>((resolve, reject) => {
      body.on('data', (chunk: Buffer) => {
        const n = Math.min(chunk.byteLength, range.end - range.next);
        for (let done = 0; done < n;) done += writeSync(fd, chunk, done, n - done, range.next + done);
        range.next += n;
        if (range.next >= range.end) resolve(void body.destroy());
      });
      body.on('end', resolve).on('error', reject);
    });
  }
};

const connection = async (first: Range): Promise<void> => {
  for (let mine = first; ;) {
    await read(mine);
    const widest = ranges.reduce((a, b) => (b.end - b.next > a.end - a.next ? b : a));
    const half = Math.floor((widest.end - widest.next) / 2);
    if (half < 2 ** 20) return;
    mine = { next: widest.end - half, end: widest.end };
    ranges.push(mine);
    widest.end = mine.next;
  }
};

void Promise.all([...ranges].map(connection)).then(() => {
  closeSync(fd);
  return pool.close();
});
