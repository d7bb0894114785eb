/** dirsAbove: the dirs of relative `/`-separated paths and every dir above them, each found once. */

/**
 * `dirs` (relative, `/`-separated; `''` the top) with every dir above each, the top among them, in the order first
 * met. The walk up from a dir stops at the first one already taken, since every dir above it is taken too: walked
 * anew for each, 10,000 dirs 1,000 deep took 20-30 s with the event loop held.
 */
export const dirsAbove = (dirs: Iterable<string>): Set<string> => {
  const taken = new Set<string>(['']);
  for (const dir of dirs)
    for (let cut = dir.length; cut > 0 && !taken.has(dir.slice(0, cut)); cut = dir.lastIndexOf('/', cut - 1))
      taken.add(dir.slice(0, cut));
  return taken;
};

/** The dir `path` lies in (`''` for one at the top). */
export const parentDir = (path: string): string => {
  const cut = path.lastIndexOf('/');
  return cut === -1 ? '' : path.slice(0, cut);
};
