import { either as E } from 'fp-ts';
import fc from 'fast-check';
import { configDecoder } from '../../src/core/config-decoder';
import { decodeConfig } from '../../src/core/decode-config';
import { name } from '../helpers/fixtures';

const file = '/mnt/configs/models.json';

const entry = (model: string, storageUri = `s3://b/${model}`): object => ({
  modelName: model,
  modelSpec: { storageUri, framework: 'sklearn', memory: '100Mi' },
});

const specOf = (result: ReturnType<typeof decodeConfig>, model: string): unknown =>
  E.isRight(result) ? result.right.get(name(model)) : undefined;

// Texts of models.json and edits of them: names that repeat, values with the characters the decoder splits on,
// layouts, and the damage a bad edit does.
const tricky = fc.constantFrom('s3://b/m', 's3://b/a,b', 's3://b/]}', 's3://b/"q"', 's3://b/\\', 'gs://x/[{');
const anEntry = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(fc.constantFrom('m1', 'm2', 'm3', 'm4'), tricky).map(([m, u]) => entry(m, u)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<unknown>(1, 'm1', null, {}, { modelName: 'm5' }),
  },
  {
    // Memory as a number written in the text (`rawNumber` below): one JSON.parse cannot give back, ones it can.
    weight: 1,
    arbitrary: fc
      .constantFrom('1e400', '2', '1.0', '12345678901234567890')
      .map((memory) => ({ modelName: 'm7', modelSpec: { storageUri: 's3://b/m7', memory: `#${memory}#` } })),
  },
);
const rawNumbers = (text: string): string => text.replace(/"#([^#"]*)#"/g, '$1');
const layout = fc.constantFrom<(entries: unknown[]) => string>(
  (entries) => rawNumbers(JSON.stringify(entries)),
  (entries) => rawNumbers(JSON.stringify(entries, null, 2)),
  (entries) => rawNumbers(` \n${JSON.stringify(entries, null, '\t')}\r\n`),
);
const damage = fc.oneof(
  fc.constant((text: string) => text),
  fc.constant((text: string) => text.replace(/\]\s*$/, ',]')),
  fc.constant((text: string) => text.replace(/\[/, '[,')),
  fc.constant((text: string) => `${text}[]`),
  fc.constant((text: string) => `\ufeff${text}`),
  fc.constant((text: string) => text.replace('"modelName"', '"modelName": "x", "modelName"')),
  fc.constant((text: string) => text.replace(/\]\s*$/, '}')),
  fc.tuple(fc.nat(), fc.constantFrom('[', ']', '{', '}', ',', '"', '\\', ':', ' ', '1e400', 'x')).map(
    ([at, insert]) =>
      (text: string) =>
        text.slice(0, at % (text.length + 1)) + insert + text.slice(at % (text.length + 1)),
  ),
  fc
    .nat()
    .map(
      (at) => (text: string) =>
        text.slice(0, at % (text.length + 1)) + text.slice((at % (text.length + 1)) + 1),
    ),
);
// A version: the entries of the one before with one edit (most keep their text), in the sequence's layout, perhaps
// damaged.
const anEdit = fc.tuple(fc.constantFrom('add', 'remove', 'change', 'none'), fc.nat(), anEntry);
const aStep = fc.tuple(
  anEdit,
  fc.oneof({ weight: 3, arbitrary: fc.constant((text: string) => text) }, { weight: 2, arbitrary: damage }),
);
const versionsOf = (
  first: unknown[],
  steps: ReadonlyArray<[typeof anEdit extends fc.Arbitrary<infer E> ? E : never, (text: string) => string]>,
  lay: (entries: unknown[]) => string,
): string[] => {
  let entries = first;
  return steps.map(([[edit, at, added], damaged]) => {
    const i = entries.length === 0 ? 0 : at % entries.length;
    if (edit === 'add') entries = [...entries.slice(0, i), added, ...entries.slice(i)];
    if (edit === 'remove') entries = entries.filter((_, j) => j !== i);
    if (edit === 'change' && entries.length > 0) entries = entries.map((e, j) => (j === i ? added : e));
    return damaged(lay(entries));
  });
};
const aSequence = fc
  .tuple(fc.array(anEntry, { maxLength: 6 }), fc.array(aStep, { minLength: 1, maxLength: 12 }), layout)
  .map(([first, steps, lay]) => versionsOf(first, steps, lay));

describe('configDecoder', () => {
  it('answers each version of models.json exactly as decodeConfig does', () => {
    fc.assert(
      fc.property(aSequence, (versions) => {
        const decode = configDecoder();
        for (const text of versions) expect(decode(file, text)).toEqual(decodeConfig(file, text));
      }),
      { numRuns: 400 },
    );
  });

  it('keeps the very spec of an entry whose text did not change, and decodes a changed one afresh', () => {
    const decode = configDecoder();
    const first = decode(file, JSON.stringify([entry('m1'), entry('m2')]));
    const second = decode(file, JSON.stringify([entry('m1'), entry('m2', 's3://b/m2-v2'), entry('m3')]));
    expect(specOf(second, 'm1')).toBe(specOf(first, 'm1'));
    expect(specOf(second, 'm2')).toEqual(
      specOf(decodeConfig(file, JSON.stringify([entry('m2', 's3://b/m2-v2')])), 'm2'),
    );
    expect(specOf(second, 'm2')).not.toEqual(specOf(first, 'm2'));
    expect(E.isRight(second) && [...second.right.keys()]).toEqual(['m1', 'm2', 'm3']);
  });

  it.each([
    ['added first', (names: string[]) => ['new', ...names]],
    ['added last', (names: string[]) => [...names, 'new']],
    ['removed in the middle', (names: string[]) => names.filter((n) => n !== 'm15')],
    ['changed in the middle', (names: string[]) => names.map((n) => (n === 'm15' ? 'm15-v2' : n))],
    ['removed first', (names: string[]) => names.slice(1)],
    ['removed last', (names: string[]) => names.slice(0, -1)],
    [
      'changed, with others removed and added here and there',
      (names: string[]) =>
        names.flatMap((n) =>
          n === 'm15'
            ? ['m15-v2']
            : n === 'm4' || n === 'm22'
              ? []
              : n === 'm9' || n === 'm25'
                ? [n, `${n}b`]
                : ['m17', 'm18', 'm19', 'm20', 'm21'].includes(n)
                  ? [`${n}-v2`]
                  : [n],
        ),
    ],
  ])('decodes again only the entry %s, each other keeping its very spec', (_, edit) => {
    const names = Array.from({ length: 30 }, (_, i) => `m${i}`);
    const entries = (listed: string[]) =>
      listed.map((listedAs) => entry(listedAs.replace('-v2', ''), `s3://b/${listedAs}`));
    // Pretty-printed, the last entry's text holds the line break before `]`: it changes when another follows it.
    const layouts = [
      { text: (e: object[]) => JSON.stringify(e), lastMayChange: false },
      { text: (e: object[]) => JSON.stringify(e, null, 2), lastMayChange: true },
    ];
    for (const { text, lastMayChange } of layouts) {
      const decode = configDecoder();
      const first = decode(file, text(entries(names)));
      const next = decode(file, text(entries(edit(names))));
      expect(next).toEqual(decodeConfig(file, text(entries(edit(names)))));
      const untouched = edit(names).filter(
        (n) =>
          names.includes(n) &&
          n !== 'm15' &&
          !(lastMayChange && [names.at(-1), edit(names).at(-1)].includes(n)),
      );
      expect(untouched.length).toBeGreaterThan(20);
      for (const model of untouched) expect(specOf(next, model)).toBe(specOf(first, model));
    }
  });

  it('after a bad version, takes the next good one from the entries of the last good one', () => {
    const decode = configDecoder();
    const good = decode(file, JSON.stringify([entry('m1'), entry('m2')]));
    const bad = decode(file, JSON.stringify([entry('m1'), entry('m1')]));
    const next = decode(file, JSON.stringify([entry('m1'), entry('m2'), entry('m3')]));
    expect(E.isLeft(bad) && bad.left).toMatchObject({ _tag: 'InvalidConfig' });
    expect(specOf(next, 'm1')).toBe(specOf(good, 'm1'));
    expect(E.isRight(next) && next.right.size).toBe(3);
  });

  it('reads a list without entries as no models', () => {
    const decode = configDecoder();
    decode(file, JSON.stringify([entry('m1')]));
    expect(decode(file, ' [ ] ')).toEqual(E.right(new Map()));
  });
});
