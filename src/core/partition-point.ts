/** partitionPoint: the binary search of a sorted list. */

/** How many of `sorted`'s items pass `before`, which holds for a prefix of them and for none after: a binary search. */
export const partitionPoint = <T>(sorted: ReadonlyArray<T>, before: (item: T) => boolean): number => {
  let [low, high] = [0, sorted.length];
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (before(sorted[middle]!)) low = middle + 1;
    else high = middle;
  }
  return low;
};
