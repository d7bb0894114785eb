/** entryKind: what a file-system entry is, in words for a log line or an error (from its stats, no I/O). */

/** The part of node's `Stats` that says what an entry is. */
export interface EntryStats {
  isSymbolicLink(): boolean;
  isFile(): boolean;
  isDirectory(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
}

/** What an entry is, in words for a log line or an error. */
export const entryKind = (stats: EntryStats): string => {
  if (stats.isSymbolicLink()) return 'a symlink';
  if (stats.isFile()) return 'a regular file';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  return 'a block device';
};
