/** ByteSink: where a direct body's bytes go, the reader's own memory. */

/** Where a direct body's bytes go: the reader's own memory. */
export interface ByteSink {
  /** The memory the next socket read may fill, at most `max` bytes long; empty: the reader wants no more bytes. */
  space(max: number): Uint8Array;
  /** `bytes` bytes landed at the start of the last space; a promise: read nothing more until it settles. */
  landed(bytes: number): Promise<void> | undefined;
}

/**
 * The wait a sink asks for after the body's last byte: nothing is read after it, so it holds nothing back; a failure
 * it carries (a write) is the sink's to report when its owner finishes with it (BatchWriter's flush), not a rejection
 * nobody hears.
 */
export const ignoreLastWait = (wait: Promise<void> | undefined): void => {
  void wait?.catch(() => undefined);
};
