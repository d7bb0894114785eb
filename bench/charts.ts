/** Hand-written SVG charts of the results: the P1 latency distribution (CDF) and P2 time vs size (log-log). */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Row, SuiteResult } from './suite';

/** One line of a chart: a label and its points. */
interface Line {
  readonly label: string;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

/** What a chart shows; a log axis needs positive values. */
interface Chart {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xLog: boolean;
  readonly yLog: boolean;
  readonly lines: ReadonlyArray<Line>;
}

const colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b'];
const width = 720;
const height = 420;
const margin = { left: 70, right: 20, top: 40, bottom: 50 };

const escapeXml = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const formatTick = (value: number): string =>
  value >= 1e6 ? `${value / 1e6}M` : value >= 1e3 ? `${value / 1e3}k` : String(Number(value.toPrecision(3)));

/** Ticks: powers of ten on a log axis, five even steps on a linear one. */
const ticksOf = (min: number, max: number, log: boolean): number[] => {
  if (log) {
    const ticks: number[] = [];
    for (let power = Math.floor(Math.log10(min)); power <= Math.ceil(Math.log10(max)); power++)
      ticks.push(10 ** power);
    return ticks;
  }
  return Array.from({ length: 6 }, (_, i) => min + ((max - min) * i) / 5);
};

/** The chart as an SVG document. */
const svgOf = (chart: Chart): string => {
  const all = chart.lines.flatMap((line) => line.points);
  const xs = all.map(([x]) => x);
  const ys = all.map(([, y]) => y);
  const bounds = (values: number[], log: boolean): [number, number] => {
    const max = Math.max(...values);
    if (!log) return [0, max];
    return [10 ** Math.floor(Math.log10(Math.min(...values))), 10 ** Math.ceil(Math.log10(max))];
  };
  const [x0, x1] = bounds(xs, chart.xLog);
  const [y0, y1] = bounds(ys, chart.yLog);
  const scale = (value: number, low: number, high: number, log: boolean): number =>
    log
      ? (Math.log10(value) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))
      : (value - low) / (high - low);
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const px = (x: number): number => margin.left + plotWidth * scale(x, x0, x1, chart.xLog);
  const py = (y: number): number => margin.top + plotHeight * (1 - scale(y, y0, y1, chart.yLog));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(chart.title)}</text>`,
  ];
  for (const tick of ticksOf(x0, x1, chart.xLog)) {
    const x = px(tick).toFixed(1);
    parts.push(
      `<line x1="${x}" y1="${margin.top}" x2="${x}" y2="${height - margin.bottom}" stroke="#ddd"/>`,
      `<text x="${x}" y="${height - margin.bottom + 16}" text-anchor="middle">${formatTick(tick)}</text>`,
    );
  }
  for (const tick of ticksOf(y0, y1, chart.yLog)) {
    const y = py(tick).toFixed(1);
    parts.push(
      `<line x1="${margin.left}" y1="${y}" x2="${width - margin.right}" y2="${y}" stroke="#ddd"/>`,
      `<text x="${margin.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${formatTick(tick)}</text>`,
    );
  }
  parts.push(
    `<text x="${margin.left + plotWidth / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(chart.xLabel)}</text>`,
    `<text transform="translate(18 ${margin.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${escapeXml(chart.yLabel)}</text>`,
  );
  chart.lines.forEach((line, i) => {
    const color = colors[i % colors.length]!;
    const d = line.points.map(([x, y], j) => `${j === 0 ? 'M' : 'L'}${px(x).toFixed(1)} ${py(y).toFixed(1)}`);
    parts.push(
      `<path d="${d.join(' ')}" fill="none" stroke="${color}" stroke-width="2"/>`,
      `<rect x="${margin.left + 12}" y="${margin.top + 8 + i * 18}" width="14" height="4" fill="${color}"/>`,
      `<text x="${margin.left + 32}" y="${margin.top + 13 + i * 18}">${escapeXml(line.label)}</text>`,
    );
  });
  parts.push('</svg>', '');
  return parts.join('\n');
};

/** The empirical CDF of `samples`: a step per sample. */
const cdfOf = (samples: ReadonlyArray<number>): Array<readonly [number, number]> =>
  [...samples]
    .sort((a, b) => a - b)
    .flatMap((value, i, sorted) => [
      [value, i / sorted.length] as const,
      [value, (i + 1) / sorted.length] as const,
    ]);

const readResult = (file: string): SuiteResult | undefined =>
  existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as SuiteResult) : undefined;

/**
 * Writes `swap-to-load.svg` and `decode-diff.svg` into `dir` from the results files there (each only when its
 * results are present); returns the files written.
 */
export const writeCharts = (dir: string): string[] => {
  const written: string[] = [];
  const swap = readResult(path.join(dir, 'swap-to-load.json'));
  if (swap?.series !== undefined) {
    const series = Object.entries(swap.series);
    writeFileSync(
      path.join(dir, 'swap-to-load.svg'),
      svgOf({
        title: 'P1 swap → load request: share of swaps at or under a latency (CDF)',
        xLabel: 'ms from the swap to the load request (log scale)',
        yLabel: 'share of swaps',
        xLog: true,
        yLog: false,
        lines: series.map(([label, samples]) => ({ label, points: cdfOf(samples) })),
      }),
    );
    written.push('swap-to-load.svg');
  }
  const decode = readResult(path.join(dir, 'decode-diff.json'));
  if (decode !== undefined && decode.rows.length > 0) {
    const steps = [...new Set(decode.rows.map((row: Row) => String(row['step'])))];
    writeFileSync(
      path.join(dir, 'decode-diff.svg'),
      svgOf({
        title: 'P2 time vs models.json size (log-log; linear is a 45° line)',
        xLabel: 'models',
        yLabel: 'median ms',
        xLog: true,
        yLog: true,
        lines: steps.map((step) => ({
          label: step,
          points: decode.rows
            .filter((row) => row['step'] === step && Number(row['medianMs']) > 0)
            .map((row) => [Number(row['models']), Number(row['medianMs'])] as const),
        })),
      }),
    );
    written.push('decode-diff.svg');
  }
  return written;
};
