/** structureProblems: what JSON.parse accepts but models.json must not hold: duplicate keys and absurd nesting. */

/** Arrays and objects nested deeper than this are refused (models.json needs three levels). */
export const maxJsonDepth = 64;

/** The problems found, at most `maxListed` of them as lines, how many there were, and whether it ended too deep. */
export interface StructureProblems {
  readonly lines: ReadonlyArray<string>;
  readonly count: number;
  /** The scan stopped at nesting deeper than `maxJsonDepth` (the last line says where). */
  readonly tooDeep: boolean;
}

const maxKeyShown = 40;

/** The index of the quote that closes the string opening at `open`, or `text.length` when it never closes. */
const stringEnd = (text: string, open: number): number => {
  let end = text.indexOf('"', open + 1);
  while (end !== -1) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++; // a backslash
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return text.length;
};

/** The key's value: its text, unescaped when it has escapes (`"\u0061"` is the key `a`). */
const keyValue = (raw: string): string => {
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw; // not JSON after all: JSON.parse will say so
  }
};

const shownKey = (raw: string): string =>
  raw.length > maxKeyShown ? `${raw.slice(0, maxKeyShown - 3)}...` : raw;

/** An open array (its element index) or object (its keys so far, and the last one, for the path). */
interface Frame {
  keys: string[] | Set<string> | undefined;
  lastKey: string;
  index: number;
}

// An object's keys are kept in a list up to this many (cheaper than a Set for the few of a model), then a Set.
const listedKeys = 16;

/** Adds `key` to the keys of the object `frame`; true when it was there already. */
const isDuplicate = (frame: Frame, key: string): boolean => {
  if (frame.keys instanceof Set) {
    if (frame.keys.has(key)) return true;
    frame.keys.add(key);
  } else if (frame.keys !== undefined) {
    if (frame.keys.includes(key)) return true;
    frame.keys.push(key);
    if (frame.keys.length > listedKeys) frame.keys = new Set(frame.keys);
  }
  return false;
};

/** The path to the innermost open container, as the error lines of decodeConfig write it: `[3].modelSpec`. */
const pathOf = (stack: ReadonlyArray<Frame>): string => {
  let path = '';
  for (const frame of stack) {
    path += frame.keys === undefined ? `[${frame.index}]` : `.${shownKey(frame.lastKey)}`;
    if (path.length > 200) return `${path.slice(0, 197)}...`;
  }
  return path.replace(/^\./, '') || '(document)';
};

/**
 * One pass over `text` that finds every duplicate key, as `[3].modelSpec: duplicate key "storageUri"`, and stops
 * at the first array or object nested deeper than `maxJsonDepth`. JSON.parse silently keeps the last of duplicate
 * keys, and a deep document costs it memory and time before any check could run. Meant for text JSON.parse
 * accepts; on other text it ends without throwing, and what it reports about such text is only a hint. It runs on
 * every config read: keep the loop tight.
 */
export const structureProblems = (text: string, maxListed = 10): StructureProblems => {
  const lines: string[] = [];
  let count = 0;
  const report = (line: string): void => {
    count++;
    if (lines.length < maxListed) lines.push(line);
  };
  const stack: Frame[] = [];
  let expectKey = false;
  // Only quotes, brackets, braces and commas matter (0x22 ", 0x7b {, 0x5b [, 0x7d }, 0x5d ], 0x2c ,).
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      const frame = stack.at(-1);
      if (expectKey && frame?.keys !== undefined) {
        const raw = text.slice(i + 1, end);
        const key = keyValue(raw);
        if (isDuplicate(frame, key))
          report(`${pathOf(stack.slice(0, -1))}: duplicate key "${shownKey(raw)}"`);
        frame.lastKey = raw;
      }
      expectKey = false;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (stack.length === maxJsonDepth) {
        report(`${pathOf(stack)}: nested deeper than ${maxJsonDepth} levels of arrays and objects`);
        return { lines, count, tooDeep: true };
      }
      stack.push({ keys: c === 0x7b ? [] : undefined, lastKey: '', index: 0 });
      expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c && stack.length > 0) {
      const frame = stack.at(-1)!;
      if (frame.keys !== undefined) expectKey = true;
      else frame.index++;
    }
  }
  return { lines, count, tooDeep: false };
};
