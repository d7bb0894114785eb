/** The option blocks of a `--help` text, for tests that check what it lists. */

/**
 * One block per option, its white space folded: its first line starts with the flag, wrapped lines are indented
 * further; a topic's heading (a line of its own, after a blank one) ends the block before it.
 */
export const helpBlocks = (help: string): string[] =>
  help
    .split(/\n(?= {2}-)/)
    .slice(1)
    .map((block) =>
      block
        .replace(/\n\n\S[^\n]*:\n?$/, '')
        .replace(/\s+/g, ' ')
        .trim(),
    );

/** The flag each block starts with (`--config-dir`, `-V`), in the order `--help` lists them. */
export const helpFlags = (blocks: ReadonlyArray<string>): string[] =>
  blocks.map((block) => block.split(' ')[0]!.replace(/,$/, ''));
