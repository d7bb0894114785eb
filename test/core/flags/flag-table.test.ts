/** The flag table is the one source: docs/operating.md's table and `--help` must say what it says. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { flagList, flagTable, isSwitch } from '../../../src/core/flags/app-config';
import { flagDocs, flagDocsMarkers, flagDocsRow, withFlagDocs } from '../../../src/core/flags/flag-docs';
import { flagTopics } from '../../../src/core/flags/flag-topics';
import { helpDescription, parseArgs } from '../../../src/command/parse-args';
import { helpBlocks, helpFlags } from '../../helpers/help-blocks';

const operatingMd = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operating.md'), 'utf8');

/** The cells of each row of the first markdown table in `text` (header and separator dropped). */
const tableRows = (text: string): string[][] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .slice(2)
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );

const generatedPart = (markdown: string): string =>
  markdown.slice(markdown.indexOf(flagDocsMarkers.begin), markdown.indexOf(flagDocsMarkers.end));

const helpText = (): string => {
  const parsed = parseArgs(['node', 'modelsync', '--help'], {});
  if (parsed._tag !== 'Help') throw new Error(`expected the help, got ${parsed._tag}`);
  return parsed.text;
};

describe('the flag table', () => {
  it('is what docs/operating.md lists, row by row (run npm run docs:flags after changing it)', () => {
    expect(operatingMd).toContain(flagDocsMarkers.begin);
    expect(tableRows(generatedPart(operatingMd))).toEqual(flagList.map(([, spec]) => flagDocsRow(spec)));
    expect(generatedPart(operatingMd)).toContain(flagDocs());
    expect(withFlagDocs(operatingMd)).toBe(operatingMd);
  });

  it('is what --help lists: each flag with its help, choices, default and env var, and no other option', () => {
    const help = helpText();
    const blocks = helpBlocks(help);
    const listed = helpFlags(blocks);
    const byTopic = flagTopics.flatMap(([, fields]) => fields.map((field) => flagTable[field].flag));
    expect(listed).toEqual([...byTopic, '-V', '-h']);
    for (const [, spec] of flagList) {
      const block = blocks.find((b) => b.startsWith(`${spec.flag} `))!;
      const usage = isSwitch(spec) ? spec.flag : `${spec.flag} <${spec.arg}>`;
      expect(block).toBe(`${usage} ${helpDescription(spec)}`);
      expect(block).toContain(`env: ${spec.env})`);
      if (spec.default !== undefined) expect(block).toContain(`default: "${spec.default}"`);
      expect(block).not.toContain('`');
    }
  });

  it('puts every flag under exactly one --help topic, and --help lists the topics in order', () => {
    const topicOf = flagTopics.flatMap(([topic, fields]) => fields.map((field) => [field, topic] as const));
    expect(topicOf.map(([field]) => field).sort()).toEqual(flagList.map(([field]) => field).sort());
    const help = parseArgs(['node', 'cli.js', '--help'], {});
    const text = help._tag === 'Help' ? help.text : '';
    const headings = text.split('\n').filter((line) => /^\S.*:$/.test(line) && !line.startsWith('Usage'));
    expect(headings).toEqual(['Arguments:', ...flagTopics.map(([topic]) => `${topic}:`), 'Other:']);
  });

  it('leaves a document without the markers alone', () => {
    expect(withFlagDocs('# no table here\n')).toBe('# no table here\n');
  });
});
