/**
 * What the docs name, read out of their markdown: each flag, env var, metric, /status field and repository file,
 * with its file and line, and the block it stands in (so a name can be judged by what the block is about).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root. */
export const repoRoot = join(__dirname, '..', '..');

/** One name as a doc gives it. */
export interface Mention {
  readonly name: string;
  /** `docs/kserve.md:142`: where to look. */
  readonly at: string;
  /** The block it stands in: its paragraph or list, its table row, or its fenced code block. */
  readonly block: string;
  /** Inside a fenced code block. */
  readonly inCode: boolean;
  /** The heading of the section it stands in (`### Status document`). */
  readonly section: string;
}

/** One line of a doc, with what it belongs to. */
interface Line {
  readonly text: string;
  readonly at: string;
  readonly block: string;
  readonly inCode: boolean;
  readonly section: string;
}

/** The docs a reader is sent to: the README and every page under docs/. */
export const docFiles = (): ReadonlyArray<string> => [
  'README.md',
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/**
 * The lines of `file`, each with its block: a fenced code block whole, a table row alone, else the run of
 * non-blank lines (a paragraph, a list) it belongs to.
 */
const linesOf = (file: string): ReadonlyArray<Line> => {
  const lines = readFileSync(join(repoRoot, file), 'utf8').split('\n');
  const blockOf: number[] = [];
  let block = 0;
  let fence = false;
  let section = '';
  const sections: string[] = [];
  const fenced: boolean[] = [];
  for (const [index, text] of lines.entries()) {
    const isFence = text.trimStart().startsWith('```');
    const isRow = !fence && text.startsWith('|');
    const previous = lines[index - 1] ?? '';
    if (isFence && !fence) block++;
    else if (
      !fence &&
      (text.trim() === '' ||
        isRow ||
        previous.startsWith('|') ||
        previous.trim() === '' ||
        previous.trimStart().startsWith('```'))
    )
      block++;
    if (!fence && /^#{1,6} /.test(text)) section = text;
    blockOf.push(block);
    sections.push(section);
    fenced.push(fence || isFence);
    if (isFence) fence = !fence;
  }
  const blocks = new Map<number, string>();
  for (const [index, text] of lines.entries())
    blocks.set(blockOf[index]!, `${blocks.get(blockOf[index]!) ?? ''}${text}\n`);
  return lines.map((text, index) => ({
    text,
    at: `${file}:${index + 1}`,
    block: blocks.get(blockOf[index]!)!,
    inCode: fenced[index]!,
    section: sections[index]!,
  }));
};

/** Every match of `pattern` (group 1 if it has one) in every line of the docs. */
export const mentionsOf = (pattern: RegExp): ReadonlyArray<Mention> =>
  docFiles().flatMap((file) =>
    linesOf(file).flatMap(({ text, ...line }) =>
      [...text.matchAll(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`))].map((match) => ({
        name: match[1] ?? match[0],
        ...line,
      })),
    ),
  );

/** The inline code spans of the docs (`like this`), outside fenced blocks: each span's text is its name. */
export const codeSpans = (): ReadonlyArray<Mention> =>
  mentionsOf(/`([^`\n]+)`/).filter((mention) => !mention.inCode);

/** The lines of a fenced `json` block and the section each stands in, for the documents the docs show whole. */
export const jsonBlocks = (): ReadonlyArray<{
  readonly text: string;
  readonly at: string;
  readonly section: string;
}> =>
  docFiles().flatMap((file) => {
    const lines = linesOf(file);
    return lines.flatMap((line, index) =>
      line.text.trim() === '```json'
        ? [
            {
              text: line.block.split('\n').slice(1, -2).join('\n'),
              at: line.at,
              section: lines[index]!.section,
            },
          ]
        : [],
    );
  });

/** `mentions` that no `known` name accounts for, as `at: name` lines (the failure message of each check). */
export const unknownMentions = <M extends Mention>(
  mentions: ReadonlyArray<M>,
  known: (mention: M) => boolean,
): ReadonlyArray<string> =>
  mentions.filter((mention) => !known(mention)).map((mention) => `${mention.at}: ${mention.name}`);
