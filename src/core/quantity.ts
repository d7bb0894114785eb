/** Kubernetes resource quantities ("100Mi", "1Gi", "0.5", 3e9), decoded to exact values so specs compare semantically. */
import * as t from 'io-ts';
import { previewValue } from './preview';

/** A decoded quantity: the text as written (kept for output) and its exact value as a reduced fraction. */
export interface Quantity {
  readonly text: string;
  /** `numerator/denominator`, reduced: equal strings mean equal amounts ("1Gi" and "1024Mi" both give "1073741824/1"). */
  readonly value: string;
}

// The binary suffixes Ki, Mi, … Ei are 2^10, 2^20, … 2^60: ten more bits each, in this order; the decimal ones
// n, u, m, (none), k, M, … E are 10^-9 … 10^18: three more digits each.
const binaryPrefixes = 'KMGTPE';
const decimalSuffixes = ['n', 'u', 'm', '', 'k', 'M', 'G', 'T', 'P', 'E'];

// The grammar of k8s.io/apimachinery resource.Quantity: sign, digits with an optional fraction, then a
// binary suffix, a decimal suffix, or a decimal exponent.
const quantityPattern = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE]?)|[eE]([+-]?\d+))$/;

const gcd = (a: bigint, b: bigint): bigint => {
  while (b !== 0n) [a, b] = [b, a % b];
  return a < 0n ? -a : a;
};

const pow10 = (exponent: number): bigint => 10n ** BigInt(exponent);

// A config repeats a handful of quantity strings across thousands of models; BigInt arithmetic is not free.
const parsed = new Map<string, Quantity | undefined>();
const maxCached = 4096;

/**
 * The longest quantity text read. Like the exponent's bound below: reading a million digits into a BigInt took over
 * a second of CPU (4 million, 6 s: the whole process stalled, probes too), and the cache kept each text whole.
 */
export const maxQuantityChars = 1000;

/** The exact amount `text` stands for, or undefined when it is no Kubernetes quantity (or over `maxQuantityChars`). */
export const parseQuantity = (text: string): Quantity | undefined => {
  if (text.length > maxQuantityChars) return undefined;
  if (parsed.has(text)) return parsed.get(text);
  const quantity = parseUncached(text);
  if (parsed.size >= maxCached) parsed.clear();
  parsed.set(text, quantity);
  return quantity;
};

const parseUncached = (text: string): Quantity | undefined => {
  const match = quantityPattern.exec(text);
  if (match === null) return undefined;
  const [, sign = '', number = '', binary, decimal, exponent] = match;
  const [whole = '', fraction = ''] = number.split('.');
  let numerator = BigInt(`${whole}${fraction}` || '0') * (sign === '-' ? -1n : 1n);
  let denominator = pow10(fraction.length);
  if (binary !== undefined) {
    numerator <<= 10n * BigInt(binaryPrefixes.indexOf(binary[0]!) + 1);
  } else {
    const power =
      exponent !== undefined ? Number(exponent) : 3 * (decimalSuffixes.indexOf(decimal ?? '') - 3);
    if (Math.abs(power) > 1000) return undefined; // refuse absurd exponents rather than allocate huge numbers
    if (power >= 0) numerator *= pow10(power);
    else denominator *= pow10(-power);
  }
  const divisor = gcd(numerator, denominator);
  return numerator === 0n
    ? { text, value: '0/1' }
    : { text, value: `${numerator / divisor}/${denominator / divisor}` };
};

/** True when both quantities are the same amount, however they are written. */
export const quantityEquals = (a: Quantity, b: Quantity): boolean => a.value === b.value;

/** The zero quantity: what Kubernetes serialises for an unset `memory`. */
export const zeroQuantity: Quantity = { text: '0', value: '0/1' };

// Go's unicode.IsSpace (JavaScript's \s, less U+FEFF, plus U+0085): what KServe's Quantity.UnmarshalJSON trims.
const goSpace = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

/** `text` without the Go spaces around it; one pass over them (a regex `\s+$` is quadratic on spaces then a letter). */
const trimGoSpaces = (text: string): string => {
  let start = 0;
  let end = text.length;
  while (start < end && goSpace.test(text[start]!)) start++;
  while (end > start && goSpace.test(text[end - 1]!)) end--;
  return text.slice(start, end);
};

/**
 * A JSON number where a quantity is read, as written: Go's Quantity.UnmarshalJSON reads the raw bytes, where
 * JSON.parse would make `1e400` Infinity and round `12345678901234567890`. A class, so that no parsed JSON value
 * (an object with the same fields) passes for one.
 */
export class QuantityNumber {
  constructor(readonly text: string) {}
}

/** The number's text in at most 80 characters, for an error line. */
const previewNumber = ({ text }: QuantityNumber): string =>
  text.length > 80 ? `${text.slice(0, 77)}...` : text;

/**
 * io-ts codec: a quantity written as a string (the spaces around it trimmed, as KServe's agent trims them) or a
 * JSON number (a QuantityNumber when its text was kept); encodes back to the text as written.
 */
export const Quantity = new t.Type<Quantity, string, unknown>(
  'Quantity',
  (u): u is Quantity =>
    typeof u === 'object' &&
    u !== null &&
    typeof (u as Quantity).text === 'string' &&
    typeof (u as Quantity).value === 'string',
  (u, context) => {
    const text =
      typeof u === 'string'
        ? trimGoSpaces(u)
        : u instanceof QuantityNumber
          ? u.text
          : typeof u === 'number' && Number.isFinite(u)
            ? String(u)
            : u;
    const quantity = typeof text === 'string' ? parseQuantity(text) : undefined;
    if (quantity !== undefined) return t.success(quantity);
    const shown = u instanceof QuantityNumber ? previewNumber(u) : previewValue(u);
    return t.failure(
      u,
      context,
      typeof text === 'string' && text.length > maxQuantityChars
        ? `expected a Kubernetes quantity of at most ${maxQuantityChars} characters, got ${shown}`
        : `expected a Kubernetes quantity such as "100Mi", "1Gi" or "0.5", got ${shown}`,
    );
  },
  (quantity) => quantity.text,
);
