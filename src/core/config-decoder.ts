/**
 * configDecoder: decodeConfig for the successive versions of one models.json, each entry whose text did not change
 * since the version before taken as it was decoded then, not parsed and checked again.
 *
 * Why: a swap usually changes one entry of many, and decoding all of them again was most of the JavaScript between
 * the swap and the load request (0.3-0.5 ms at 100 models, 22 ms at 20,000: `npm run bench -- decode-diff`). An
 * entry is found unchanged by where the texts part and meet again (only the part between is scanned), and between
 * them by walking both lists in step. The answers are decodeConfig's, to the letter: whatever is not a plain list
 * of entries that decode (a problem of any kind, a name listed twice, a number JSON.parse cannot give back as
 * written) goes through decodeConfig whole, which words the error as it always has.
 */
import * as E from 'fp-ts/Either';
import * as t from 'io-ts';
import { decodeConfig } from './decode-config';
import type { ConfigError } from './errors';
import { isJsonBlank } from './json/json';
import { structureProblems } from './json/json-structure';
import { ModelConfig, ModelConfigs, type ModelConfig as Entry, type ModelSpec } from './model-config';
import type { ModelName } from './model-name';
import { partitionPoint } from './partition-point';
import type { Snapshot } from './snapshot';

/** Decodes one version of models.json after another (`file` names it in errors). */
export type ConfigDecoder = (file: string, text: string) => E.Either<ConfigError, Snapshot>;

// Only valid entries are kept, so their context is never read: one serves them all.
const context: t.Context = [{ key: '', type: ModelConfigs, actual: undefined }];

/** JSON.parse of `text`, or undefined when it is not JSON. */
const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};

/** The entry `value` decodes to, or undefined when it does not (decodeConfig then says why). */
const decodedEntry = (value: unknown): Entry | undefined => {
  const entry = ModelConfig.validate(value, context);
  return entry._tag === 'Right' ? entry.right : undefined;
};

/** A version of models.json accepted: its text, its root array's bounds (`[`, the commas, `]`), its entries. */
interface Accepted {
  readonly text: string;
  readonly bounds: ReadonlyArray<number>;
  readonly entries: ReadonlyArray<Entry>;
}

const none: Accepted = { text: '', bounds: [], entries: [] };

// Compared a kilobyte at a time: slices are compared natively, about fifty times faster than character by character.
const chunk = 1024;

/** How many characters `a` and `b` share from their start. */
const commonPrefix = (a: string, b: string): number => {
  const length = Math.min(a.length, b.length);
  let at = 0;
  while (at + chunk <= length && a.slice(at, at + chunk) === b.slice(at, at + chunk)) at += chunk;
  while (at < length && a.charCodeAt(at) === b.charCodeAt(at)) at++;
  return at;
};

/** How many characters `a` and `b` share at their end, at most `most`. */
const commonSuffix = (a: string, b: string, most: number): number => {
  let shared = 0;
  while (
    shared + chunk <= most &&
    a.slice(a.length - shared - chunk, a.length - shared) ===
      b.slice(b.length - shared - chunk, b.length - shared)
  )
    shared += chunk;
  while (shared < most && a.charCodeAt(a.length - 1 - shared) === b.charCodeAt(b.length - 1 - shared))
    shared++;
  return shared;
};

/** How far past where it is expected an unchanged entry of the version before is looked for (a removal skips one). */
const lookAhead = 3;

/** The index of `value` in the ascending `sorted`, or -1. */
const indexIn = (sorted: ReadonlyArray<number>, value: number): number => {
  const at = partitionPoint(sorted, (item) => item < value);
  return sorted[at] === value ? at : -1;
};

/**
 * The bounds of the root array of `text` (its `[`, the commas between its entries, its `]`), or undefined when it is
 * not a list of entries without problems. Only the part `before` does not share is scanned: from its last entry
 * boundary before `prefix` (where the texts part) to the first one at or past `suffixFrom` that `before` has too
 * (where they meet again, `shift` characters further on in `before`).
 */
const boundsOf = (text: string, before: Accepted, prefix: number, suffixFrom: number, shift: number) => {
  // The last boundary before `prefix`, but not the `]` (the scan resumes at one with entries after it): -1 if none.
  const resumeAt = Math.min(
    before.bounds.length - 2,
    partitionPoint(before.bounds, (bound) => bound < prefix) - 1,
  );
  const resume =
    resumeAt < 0
      ? undefined
      : {
          from: before.bounds[resumeAt]!,
          elements: resumeAt,
          stopAt: (offset: number) => offset >= suffixFrom && indexIn(before.bounds, offset + shift) !== -1,
        };
  const structure = structureProblems(text, 0, resume);
  const root = structure.rootArray;
  if (structure.count > 0 || structure.tooDeep || structure.inexactNumbers || root === undefined)
    return undefined;
  const bounds = [...before.bounds.slice(0, Math.max(resumeAt, 0)), root.open, ...root.commas, root.close];
  if (root.stopped === true) {
    for (let at = indexIn(before.bounds, root.close + shift) + 1; at < before.bounds.length; at++)
      bounds.push(before.bounds[at]! - shift);
  } else if (!isJsonBlank(text.slice(root.close + 1))) return undefined;
  return isJsonBlank(text.slice(0, bounds[0])) ? bounds : undefined;
};

/**
 * `text` accepted, decoding only the entries not found as they were in `before` (an entry within the text both share
 * at their start or at their end, bounded alike); undefined whenever decodeConfig must answer instead.
 */
const decodeChanged = (text: string, before: Accepted): Accepted | undefined => {
  // Plain loops below: this runs once a swap, too seldom for the JIT to make closures and destructuring cheap.
  // The shared start and end may overlap (an entry added before copies of itself): each is a fact about equal text
  // on its own, and each entry is taken from `before` by one of them, its bounds checked there.
  const prefix = commonPrefix(before.text, text);
  const suffixFrom = text.length - commonSuffix(before.text, text, Math.min(before.text.length, text.length));
  const shift = before.text.length - text.length;
  const bounds = boundsOf(text, before, prefix, suffixFrom, shift);
  if (bounds === undefined) return undefined;
  const count = bounds.length - 1;
  if (count === 1 && isJsonBlank(text.slice(bounds[0]! + 1, bounds[1]))) return undefined; // `[]`: decodeConfig's
  const fromEnd = before.entries.length - count;
  const entries = new Array<Entry | undefined>(count);
  let fresh = 0;
  // Changes further apart than the shared start and end are walked in step: `before`'s entries are looked for past
  // the last one taken (`expected`: the entries since were added) and as many further on as entries were not found
  // since (they replaced as many: changed), each up to `lookAhead` on (removed).
  let expected = 0;
  let missed = 0;
  const sameText = (at: number, start: number, end: number): boolean =>
    at < before.entries.length &&
    before.bounds[at + 1]! - before.bounds[at]! === end - start &&
    before.text.slice(before.bounds[at]! + 1, before.bounds[at + 1]) === text.slice(start + 1, end);
  for (let index = 0; index < count; index++) {
    // The entry as `before` decoded it, when `before` had it: within the text both share, bounded alike, or, between
    // them, the same text where the walk looks.
    const start = bounds[index]!;
    const end = bounds[index + 1]!;
    const inPrefix = end <= prefix;
    let was = inPrefix ? index : start + 1 >= suffixFrom ? index + fromEnd : -1;
    const offset = inPrefix ? 0 : shift;
    if (was < 0 || before.bounds[was] !== start + offset || before.bounds[was + 1] !== end + offset) {
      was = -1;
      for (let on = 0; was < 0 && on < lookAhead; on++) {
        if (sameText(expected + on, start, end)) was = expected + on;
        else if (missed > 0 && sameText(expected + missed + on, start, end)) was = expected + missed + on;
      }
    }
    entries[index] = was < 0 ? undefined : before.entries[was];
    if (was < 0) {
      fresh++;
      missed++;
    } else {
      expected = was + 1;
      missed = 0;
    }
  }
  // Most entries new (the first version): one JSON.parse of the whole is cheaper than one per entry.
  const mostlyNew = fresh > count / 4;
  const whole = mostlyNew ? parsed(text) : undefined;
  if (mostlyNew && (!Array.isArray(whole) || whole.length !== count)) return undefined;
  for (let index = 0; fresh > 0 && index < count; index++) {
    if (entries[index] !== undefined) continue;
    const entry = decodedEntry(
      mostlyNew ? (whole as unknown[])[index] : parsed(text.slice(bounds[index]! + 1, bounds[index + 1])),
    );
    if (entry === undefined) return undefined;
    entries[index] = entry;
  }
  return { text, bounds, entries: entries as Entry[] };
};

/** The snapshot of `entries`; undefined when a name is listed twice (decodeConfig says where). */
const snapshotOf = (entries: ReadonlyArray<Entry>): Snapshot | undefined => {
  const snapshot = new Map<ModelName, ModelSpec>();
  for (let index = 0; index < entries.length; index++) {
    const { modelName, modelSpec } = entries[index]!;
    if (snapshot.has(modelName)) return undefined;
    snapshot.set(modelName, modelSpec);
  }
  return snapshot;
};

/** A decoder that remembers the entries of the last version it accepted. */
export const configDecoder = (): ConfigDecoder => {
  let accepted = none;
  return (file, text) => {
    const decoded = decodeChanged(text, accepted);
    const snapshot = decoded && snapshotOf(decoded.entries);
    if (decoded === undefined || snapshot === undefined) return decodeConfig(file, text);
    accepted = decoded;
    return E.right(snapshot);
  };
};
