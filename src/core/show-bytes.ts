/** showBytes: a byte count as people read it in an error line. */

const units: ReadonlyArray<readonly [string, number]> = [
  ['TiB', 2 ** 40],
  ['GiB', 2 ** 30],
  ['MiB', 2 ** 20],
  ['KiB', 2 ** 10],
];

/** A byte count for people: `256 GiB`, `1.95 KiB`, `900 bytes`. */
export const showBytes = (bytes: number): string => {
  const unit = units.find(([, size]) => bytes >= size);
  if (unit === undefined) return `${bytes} bytes`;
  const amount = bytes / unit[1];
  return `${Number(amount.toFixed(amount < 10 ? 2 : 1))} ${unit[0]}`;
};
