/** The words a yes/no env var may hold: a switch's `MODELSYNC_*` var, and KServe's `S3_*` ones. */

/** The words, case and surrounding spaces ignored; anything else means neither. */
export const switchWords = { on: ['true', '1', 'yes', 'on'], off: ['false', '0', 'no', 'off', ''] } as const;

/** The boolean `text` means, or undefined when it is none of `switchWords`. */
export const switchValue = (text: string): boolean | undefined => {
  const word = text.trim().toLowerCase();
  if ((switchWords.on as ReadonlyArray<string>).includes(word)) return true;
  if ((switchWords.off as ReadonlyArray<string>).includes(word)) return false;
  return undefined;
};
