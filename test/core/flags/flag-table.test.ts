/** The flag table is the one source: docs/operating.md's table and `--help` must say what it says. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { flagList, flagTable, isSwitch, type FlagSpec } from '../../../src/core/flags/app-config';
import { flagDocs, flagDocsMarkers, flagDocsRow, withFlagDocs } from '../../../src/core/flags/flag-docs';
import { advancedFlagTopics, flagTopics, type FlagTopic } from '../../../src/core/flags/flag-topics';
import { removedFlags } from '../../../src/core/flags/removed-flags';
import { helpDescription, parseArgs } from '../../../src/command/parse-args';
import { helpBlocks, helpFlags } from '../../helpers/help-blocks';

const operatingMd = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operating.md'), 'utf8');

/** The cells of each row of the markdown tables in `text` (their headers and separators dropped). */
const tableRows = (text: string): string[][] =>
  text
    .split('\n\n')
    .filter((block) => block.startsWith('|'))
    .flatMap((table) => table.split('\n').slice(2))
    .map((line) =>
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );

const generatedPart = (markdown: string): string =>
  markdown.slice(markdown.indexOf(flagDocsMarkers.begin), markdown.indexOf(flagDocsMarkers.end));

const helpText = (...topic: string[]): string => {
  const parsed = parseArgs(['node', 'modelsync', '--help', ...topic], {});
  if (parsed._tag !== 'Help') throw new Error(`expected the help, got ${parsed._tag}`);
  return parsed.text;
};

describe('the flag table', () => {
  it('is what docs/operating.md lists, row by row (run npm run docs:flags after changing it)', () => {
    expect(operatingMd).toContain(flagDocsMarkers.begin);
    expect(tableRows(generatedPart(operatingMd))).toEqual(
      [...flagTopics, ...advancedFlagTopics].flatMap(([, fields]) =>
        fields.map((field) => flagDocsRow(flagTable[field])),
      ),
    );
    expect(generatedPart(operatingMd)).toContain(flagDocs());
    expect(withFlagDocs(operatingMd)).toBe(operatingMd);
  });

  it.each([
    ['--help', [], flagTopics],
    ['--help advanced', ['advanced'], advancedFlagTopics],
  ] as ReadonlyArray<readonly [string, string[], ReadonlyArray<FlagTopic>]>)(
    'is what %s lists: each flag of its topics with its help, choices, default and env var, and no other option',
    (_name, topic, topics) => {
      const help = helpText(...topic);
      const blocks = helpBlocks(help);
      const listed = helpFlags(blocks);
      const byTopic = topics.flatMap(([, fields]) => fields.map((field) => flagTable[field].flag));
      expect(listed).toEqual([...byTopic, '-V', '-h']);
      for (const spec of topics.flatMap(([, fields]) => fields.map((field): FlagSpec => flagTable[field]))) {
        const block = blocks.find((b) => b.startsWith(`${spec.flag} `))!;
        const usage = isSwitch(spec) ? spec.flag : `${spec.flag} <${spec.arg}>`;
        expect(block).toBe(`${usage} ${helpDescription(spec)}`);
        expect(block).toContain(`env: ${spec.env})`);
        if (spec.default !== undefined) expect(block).toContain(`default: "${spec.default}"`);
        expect(block).not.toContain('`');
      }
    },
  );

  it('puts every flag under exactly one --help topic, and --help lists the topics in order', () => {
    const topicOf = [...flagTopics, ...advancedFlagTopics].flatMap(([topic, fields]) =>
      fields.map((field) => [field, topic] as const),
    );
    expect(topicOf.map(([field]) => field).sort()).toEqual(flagList.map(([field]) => field).sort());
    for (const [topic, topics] of [
      [[], flagTopics],
      [['advanced'], advancedFlagTopics],
    ] as const) {
      const headings = helpText(...topic)
        .split('\n')
        .filter((line) => /^\S.*:$/.test(line) && !line.startsWith('Usage'));
      expect(headings).toEqual(['Arguments:', ...topics.map(([heading]) => `${heading}:`), 'Other:']);
    }
    expect(helpText()).toContain("'modelsync --help advanced'");
  });

  it.each(removedFlags.map((removed) => [removed.flag, removed] as const))(
    'refuses the removed %s, and its env var, with one line naming it',
    (flag, { env }) => {
      for (const [args, named] of [
        [[flag, '1'], flag],
        [[`${flag}=1`], flag],
        [[], env],
      ] as const) {
        const parsed = parseArgs(['node', 'modelsync', ...args], args.length === 0 ? { [env]: '1' } : {});
        expect(parsed).toMatchObject({ _tag: 'UsageError', exitCode: 2 });
        const lines = parsed._tag === 'UsageError' ? parsed.message.trim().split('\n') : [];
        expect(lines).toHaveLength(2);
        expect(lines[0]).toMatch(new RegExp(`^modelsync: ${named} was removed: `));
      }
      expect(Object.values(flagTable).map((spec) => spec.flag)).not.toContain(flag);
    },
  );

  it('leaves a document without the markers alone', () => {
    expect(withFlagDocs('# no table here\n')).toBe('# no table here\n');
  });
});
