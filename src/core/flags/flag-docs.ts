/** The flags table of docs/operating.md, rendered from the flag table (`npm run docs:flags` writes it there). */
import { flagTable, isSwitch, switchWords, type FlagSpec } from './app-config';
import { advancedFlagTopics, flagTopics, type FlagTopic } from './flag-topics';

/** A flag's row: flag, env var, default (`off` for a switch, `—` for none) and its help, as docs cells. */
export const flagDocsRow = (spec: FlagSpec): ReadonlyArray<string> => [
  `\`${spec.flag}\``,
  `\`${spec.env}\``,
  isSwitch(spec) ? 'off' : spec.default === undefined ? '—' : `\`${spec.default}\``,
  spec.help,
];

/** Markdown table rows with every column padded to its widest cell, as Prettier aligns them. */
const alignedTable = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => [...row[column]!].length)));
  const line = (cells: ReadonlyArray<string>): string =>
    `| ${cells.map((cell, column) => cell + ' '.repeat(widths[column]! - [...cell].length)).join(' | ')} |`;
  const [header, ...body] = rows;
  return [line(header!), line(widths.map((width) => '-'.repeat(width))), ...body.map(line)].join('\n');
};

/** The table of the flags under `topics`, one row per flag in `--help` order. */
export const flagDocsTable = (topics: ReadonlyArray<FlagTopic>): string =>
  alignedTable([
    ['flag', 'env', 'default', 'meaning'],
    ...topics.flatMap(([, fields]) => fields.map((field) => flagDocsRow(flagTable[field]))),
  ]);

/** Where the generated part of docs/operating.md begins and ends. */
export const flagDocsMarkers = {
  begin: '<!-- flags:begin (npm run docs:flags) -->',
  end: '<!-- flags:end -->',
} as const;

/** The generated part: the tables of `--help` and `--help advanced`, and what a switch's env var takes. */
export const flagDocs = (): string => {
  const words = (list: ReadonlyArray<string>): string =>
    list.map((word) => (word === '' ? 'empty' : `\`${word}\``)).join('/');
  return [
    flagDocsTable(flagTopics),
    'The tuning knobs, which `modelsync --help advanced` lists:',
    flagDocsTable(advancedFlagTopics),
    `Switches (flags without a value) read their env var as on for ${words(switchWords.on)} and as off for ${words(switchWords.off)} (any case); any other value is an error. On the command line a switch takes no value: \`--once=false\` and \`--once false\` are usage errors naming it (leave the switch out to keep it off).`,
  ].join('\n\n');
};

/** `markdown` with the text between the markers replaced by `flagDocs()`; unchanged when a marker is missing. */
export const withFlagDocs = (markdown: string): string => {
  const begin = markdown.indexOf(flagDocsMarkers.begin);
  const end = markdown.indexOf(flagDocsMarkers.end);
  if (begin < 0 || end < begin) return markdown;
  return `${markdown.slice(0, begin + flagDocsMarkers.begin.length)}\n\n${flagDocs()}\n\n${markdown.slice(end)}`;
};
