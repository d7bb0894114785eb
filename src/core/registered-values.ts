/**
 * RegisteredValues: the registered secrets of the redaction, found in a text by one scan (redact.ts's SecretRegistry
 * holds one).
 */

/** Values shorter than this are not registered: hiding every `json` or `1` would make logs unreadable. */
export const minSecretLength = 6;

/** `text` with its ASCII letters in lower case and every other character as it is: the same length. */
const foldAscii = (text: string): string => text.replace(/[A-Z]+/g, (run) => run.toLowerCase());

/** The character code at `index` of `text`, an ASCII capital as its small letter. */
const foldedCodeAt = (text: string, index: number): number => {
  const code = text.charCodeAt(index);
  return code >= 65 && code <= 90 ? code + 32 : code;
};

/** The two characters of `text` at `index` as foldAscii makes them, as one number. */
const pairAt = (text: string, index: number): number =>
  (foldedCodeAt(text, index) << 16) | foldedCodeAt(text, index + 1);

/**
 * Registered values (ASCII letters in either case), found by one scan that looks each place up by the
 * `minSecretLength` characters starting there: built in time linear in the values and run in time linear in the
 * text, however many values there are. One regular expression alternating them took seconds to compile for a few
 * thousand (a model each with its own SAS), again at each registration, and each line ran through all of them.
 */
export class RegisteredValues {
  private readonly byHead = new Map<string, string[]>();
  private readonly pairs = new Set<number>();

  constructor(values: Iterable<string>) {
    for (const value of values) this.add(value);
  }

  /**
   * Adds `value` (one not added before): a secret that contains another is hidden whole, so each head's values are
   * longest first.
   */
  add(value: string): void {
    const folded = foldAscii(value);
    const head = folded.slice(0, minSecretLength);
    const sameHead = this.byHead.get(head) ?? [];
    const at = sameHead.findIndex((other) => other.length < folded.length);
    sameHead.splice(at === -1 ? sameHead.length : at, 0, folded);
    this.byHead.set(head, sameHead);
    this.pairs.add(pairAt(folded, 0));
  }

  /** The length of the longest value at `index` of `text`, or 0; only a place whose first two characters start a value is folded. */
  private lengthAt(text: string, index: number): number {
    if (!this.pairs.has(pairAt(text, index))) return 0;
    const sameHead = this.byHead.get(foldAscii(text.slice(index, index + minSecretLength)));
    const longest = sameHead?.[0]?.length ?? 0;
    const folded = longest === 0 ? '' : foldAscii(text.slice(index, index + longest));
    return sameHead?.find((value) => folded.startsWith(value))?.length ?? 0;
  }

  /** Where the first value at or after `from` in `text` starts, and its length; undefined: none. */
  nextIn(text: string, from: number): { readonly index: number; readonly length: number } | undefined {
    if (this.empty) return undefined;
    for (let index = from; index + minSecretLength <= text.length; index++) {
      const length = this.lengthAt(text, index);
      if (length > 0) return { index, length };
    }
    return undefined;
  }

  /** Whether there is no value to hide. */
  get empty(): boolean {
    return this.pairs.size === 0;
  }

  /** `text` with every value in it hidden, leftmost first. */
  hiddenIn(text: string, mark: string): string {
    if (this.empty) return text;
    let shown = '';
    let from = 0;
    for (let found = this.nextIn(text, 0); found !== undefined; found = this.nextIn(text, from)) {
      shown += text.slice(from, found.index) + mark;
      from = found.index + found.length;
    }
    return from === 0 ? text : shown + text.slice(from);
  }
}
