/** structureProblems: what JSON.parse accepts but models.json must not hold: duplicate keys and absurd nesting. */

/** Arrays and objects nested deeper than this are refused (models.json needs three levels). */
export const maxJsonDepth = 64;

/** The problems found, at most `maxListed` of them as lines, how many there were, and whether it ended too deep. */
export interface StructureProblems {
  readonly lines: ReadonlyArray<string>;
  readonly count: number;
  /** The scan stopped at nesting deeper than `maxJsonDepth` (the last line says where). */
  readonly tooDeep: boolean;
  /**
   * A number JSON.parse cannot give back as written (`1e400` is Infinity, `12345678901234567890` loses digits,
   * `1.0` reads `1`): a reader that needs the number's text (a quantity) must ask JSON.parse for its source.
   */
  readonly inexactNumbers: boolean;
  /**
   * When the text's root is an array that closes: where its `[`, the commas between its elements and its `]` are
   * (for text JSON.parse accepts, the elements are the text between them).
   */
  readonly rootArray?: RootArray;
}

/** The offsets of a root array's brackets and of the commas between its elements. */
export interface RootArray {
  readonly open: number;
  readonly commas: ReadonlyArray<number>;
  readonly close: number;
  /** The scan stopped at `close`, a comma where `Resume.stopAt` said to (what follows was not read). */
  readonly stopped?: boolean;
}

/**
 * A scan of the root array from one of its element boundaries on, the text before it known to be free of
 * problems (an earlier version's, unchanged): `open` in the answer is then `from`.
 */
export interface Resume {
  /** The offset of the root array's `[` or of one of its commas. */
  readonly from: number;
  /** How many elements come before it. */
  readonly elements: number;
  /** Whether to stop at this comma or closing bracket of the root array (what follows is known too). */
  readonly stopAt: (offset: number) => boolean;
}

const quote = 34;
const backslash = 92;
const openBrace = 123;
const closeBrace = 125;
const openBracket = 91;
const closeBracket = 93;
const comma = 44;
const objectKind = 1;
const arrayKind = 2;
// Keys of an object are compared pairwise up to this many; past it (or once a key has escapes) a Set is used.
const pairwiseKeys = 16;
const maxKeyShown = 40;

/** The end of the number literal starting at `start`: past its digits, sign, point and exponent. */
const numberEnd = (text: string, start: number): number => {
  let end = start + 1;
  for (
    let c = text.charCodeAt(end);
    (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46 || (c | 0x20) === 101;
  )
    c = text.charCodeAt(++end);
  return end;
};

/** The index of the quote that closes the string opening at `open`, or `text.length` when it never closes. */
const stringEnd = (text: string, open: number): number => {
  let end = text.indexOf('"', open + 1);
  while (end !== -1) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === backslash) slashes++;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return text.length;
};

const hasEscape = (text: string, start: number, end: number): boolean => {
  for (let i = start; i < end; i++) if (text.charCodeAt(i) === backslash) return true;
  return false;
};

const sameRange = (text: string, a: number, aEnd: number, b: number, bEnd: number): boolean => {
  if (aEnd - a !== bEnd - b) return false;
  for (let i = 0; a + i < aEnd; i++) if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
  return true;
};

/** The key's value: its text, unescaped when it has escapes (`"\u0061"` is the key `a`). */
const keyValue = (text: string, start: number, end: number): string => {
  const raw = text.slice(start, end);
  if (!hasEscape(text, start, end)) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw; // not JSON after all: JSON.parse will say so
  }
};

const shownKey = (raw: string): string =>
  `"${raw.length > maxKeyShown ? `${raw.slice(0, maxKeyShown - 3)}...` : raw}"`;

const frames = maxJsonDepth + 1;

/** The state of one scan: a stack of open arrays and objects, and the keys seen in each open object. */
class Scan {
  readonly kinds = new Uint8Array(frames);
  readonly elementIndex = new Int32Array(frames);
  readonly lastKeyStart = new Int32Array(frames);
  readonly lastKeyEnd = new Int32Array(frames);
  readonly keysFrom = new Int32Array(frames);
  readonly keySets: Array<Set<string> | undefined> = new Array<Set<string> | undefined>(frames);
  readonly keyStarts = new Int32Array(frames * pairwiseKeys);
  readonly keyEnds = new Int32Array(frames * pairwiseKeys);
  readonly lines: string[] = [];
  keyCount = 0;
  count = 0;
  /** The first backslash at or after the last key checked (Infinity: none left); one forward search per text. */
  private backslash = -1;

  constructor(
    readonly text: string,
    readonly maxListed: number,
  ) {}

  open(frame: number, kind: number): void {
    this.kinds[frame] = kind;
    this.elementIndex[frame] = 0;
    this.keysFrom[frame] = this.keyCount;
    this.keySets[frame] = undefined;
  }

  close(frame: number): void {
    this.keyCount = this.keysFrom[frame]!;
    this.keySets[frame] = undefined;
  }

  /** A key of the object at `frame` (the innermost open one), at `start`..`end` of the text. */
  addKey(frame: number, start: number, end: number): void {
    const text = this.text;
    this.lastKeyStart[frame] = start;
    this.lastKeyEnd[frame] = end;
    let set = this.keySets[frame];
    if (set === undefined) {
      const first = this.keysFrom[frame]!;
      for (let k = first; k < this.keyCount; k++) {
        if (sameRange(text, this.keyStarts[k]!, this.keyEnds[k]!, start, end))
          return this.duplicate(frame, start, end);
      }
      if (this.keyCount - first < pairwiseKeys && !this.escapes(start, end)) {
        this.keyStarts[this.keyCount] = start;
        this.keyEnds[this.keyCount++] = end;
        return;
      }
      set = new Set<string>();
      for (let k = first; k < this.keyCount; k++)
        set.add(keyValue(text, this.keyStarts[k]!, this.keyEnds[k]!));
      this.keySets[frame] = set;
      this.keyCount = first;
    }
    const key = keyValue(text, start, end);
    if (set.has(key)) this.duplicate(frame, start, end);
    else set.add(key);
  }

  /** True when the key at `start`..`end` has an escape (keys come in text order, so the search only moves on). */
  escapes(start: number, end: number): boolean {
    if (this.backslash < start) {
      const at = this.text.indexOf('\\', start);
      this.backslash = at === -1 ? Infinity : at;
    }
    return this.backslash < end;
  }

  duplicate(frame: number, start: number, end: number): void {
    this.report(`${this.pathTo(frame)}: duplicate key ${shownKey(this.text.slice(start, end))}`);
  }

  report(line: string): void {
    this.count++;
    if (this.lines.length < this.maxListed) this.lines.push(line);
  }

  /** The path to the container at frame `upTo`, as the error lines of decodeConfig write it: `[3].modelSpec`. */
  pathTo(upTo: number): string {
    let path = '';
    for (let f = 0; f < upTo; f++) {
      path +=
        this.kinds[f] === arrayKind
          ? `[${this.elementIndex[f]}]`
          : `.${shownKey(this.text.slice(this.lastKeyStart[f], this.lastKeyEnd[f])).slice(1, -1)}`;
      if (path.length > 200) return `${path.slice(0, 197)}...`;
    }
    return path.replace(/^\./, '') || '(document)';
  }
}

// What each ASCII character means to the scan; everything else (values, whitespace) is skipped.
const other = 0;
const stringStart = 1;
const opening = 2;
const closing = 3;
const separator = 4;
const numberStart = 5;
const charClass = new Uint8Array(128);
charClass[45] = numberStart; // -
for (let digit = 48; digit <= 57; digit++) charClass[digit] = numberStart;
charClass[quote] = stringStart;
charClass[openBrace] = opening;
charClass[openBracket] = opening;
charClass[closeBrace] = closing;
charClass[closeBracket] = closing;
charClass[comma] = separator;

/**
 * One pass over `text` (no recursion, no allocation for ordinary objects) that finds every duplicate key, as
 * `[3].modelSpec: duplicate key "storageUri"`, and stops at the first array or object nested deeper than
 * `maxJsonDepth`. JSON.parse silently keeps the last of duplicate keys, and a deep document costs it memory and
 * time before any check could run. Meant for text JSON.parse accepts; on other text it ends without throwing,
 * and what it reports about such text is only a hint. It runs on every config read: keep the loop tight.
 */
export const structureProblems = (text: string, maxListed = 10, resume?: Resume): StructureProblems => {
  const scan = new Scan(text, maxListed);
  const length = text.length;
  let depth = 0;
  let expectKey = false;
  let inexactNumbers = false;
  let rootOpen = -1;
  let rootClose = -1;
  let stopped = false;
  const rootCommas: number[] = [];
  if (resume !== undefined) {
    rootOpen = resume.from;
    scan.open(depth++, arrayKind);
    scan.elementIndex[0] = resume.elements;
  }
  for (let i = resume === undefined ? 0 : resume.from + 1; i < length; i++) {
    const c = text.charCodeAt(i);
    const kind = c < 128 ? charClass[c]! : other;
    if (kind === other) continue;
    if (kind === stringStart) {
      const end = stringEnd(text, i);
      if (expectKey) scan.addKey(depth - 1, i + 1, end);
      expectKey = false;
      i = end;
    } else if (kind === opening) {
      if (depth === frames - 1) {
        scan.report(`${scan.pathTo(depth)}: nested deeper than ${maxJsonDepth} levels of arrays and objects`);
        return { lines: scan.lines, count: scan.count, tooDeep: true, inexactNumbers };
      }
      if (depth === 0 && rootOpen === -1 && c === openBracket) rootOpen = i;
      scan.open(depth++, c === openBrace ? objectKind : arrayKind);
      expectKey = c === openBrace;
    } else if (kind === numberStart) {
      // Numbers are rare in models.json (a memory written as one): only those that do not read back are told.
      const end = numberEnd(text, i);
      if (!inexactNumbers) {
        const literal = text.slice(i, end);
        inexactNumbers = String(Number(literal)) !== literal;
      }
      i = end - 1;
    } else if (kind === closing) {
      if (depth > 0) scan.close(--depth);
      if (depth === 0 && rootClose === -1) {
        rootClose = i;
        stopped = resume?.stopAt(i) === true;
        if (stopped) break;
      }
      expectKey = false;
    } else if (depth > 0) {
      if (scan.kinds[depth - 1] === objectKind) expectKey = true;
      else {
        scan.elementIndex[depth - 1] = scan.elementIndex[depth - 1]! + 1;
        if (depth === 1 && rootOpen !== -1 && rootClose === -1) {
          if (resume?.stopAt(i) === true) {
            rootClose = i;
            stopped = true;
            break;
          }
          rootCommas.push(i);
        }
      }
    }
  }
  const rootArray =
    rootOpen !== -1 &&
    rootClose > rootOpen &&
    (text.charCodeAt(rootClose) === closeBracket || (stopped && text.charCodeAt(rootClose) === comma))
      ? { open: rootOpen, commas: rootCommas, close: rootClose, stopped }
      : undefined;
  return { lines: scan.lines, count: scan.count, tooDeep: false, inexactNumbers, rootArray };
};
