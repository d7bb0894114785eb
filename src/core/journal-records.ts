/** The load journal's records: one JSON array a line, `["starting","<model>"]` before a load, `["confirmed","<model>"]` after. */
import { modelNameProblem, type ModelName } from './model-name';

/** What a record says happened to a model's load. */
export type JournalEvent = 'starting' | 'confirmed';

/** One record as written: a line of JSON, so any model name (quotes, newlines, Unicode) round-trips. */
export const journalRecord = (event: JournalEvent, name: ModelName): string =>
  `${JSON.stringify([event, name])}\n`;

/** What a journal's text says: the loads started and not confirmed since, and what had to be skipped. */
export interface JournalContent {
  readonly unconfirmed: ReadonlySet<ModelName>;
  /** Complete lines that are no record (a neighbour's edit, a disk error): skipped. */
  readonly badLines: number;
  /** The text does not end in a newline: the last append was cut short by a crash; its partial line is skipped. */
  readonly tornTail: boolean;
}

// A record is short (a model name is at most 253 characters, six times that escaped): a longer line is none, and a
// line this short cannot nest deep enough to trouble JSON.parse, so it needs none of parseJson's structure checks.
const maxRecordChars = 4096;

const parsedLine = (line: string): unknown => {
  if (line.length > maxRecordChars || !line.startsWith('[')) return undefined;
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
};

const decodeRecord = (line: string): [JournalEvent, ModelName] | undefined => {
  const json = parsedLine(line);
  if (!Array.isArray(json) || json.length !== 2) return undefined;
  const [event, name] = json as unknown[];
  if (event !== 'starting' && event !== 'confirmed') return undefined;
  if (typeof name !== 'string' || modelNameProblem(name) !== undefined) return undefined;
  return [event, name as ModelName];
};

/** Replays the records of `text` in order: a model is unconfirmed when its last record is `starting`. */
export const readJournalRecords = (text: string): JournalContent => {
  const lines = text.split('\n');
  const tornTail = lines.pop() !== '';
  const unconfirmed = new Set<ModelName>();
  let badLines = 0;
  for (const line of lines) {
    if (line === '') continue;
    const record = decodeRecord(line);
    if (record === undefined) badLines++;
    else if (record[0] === 'starting') unconfirmed.add(record[1]);
    else unconfirmed.delete(record[1]);
  }
  return { unconfirmed, badLines, tornTail };
};
