/** Tests of extraction with a model's allow and ignore patterns: only the entries they take land. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FileSelection } from '../../../src/core/file-selection';
import { extractFile, extractStream, type ArchiveFormat } from '../../../src/storage/archive/extract';
import { defaultDownloadLimits } from '../../../src/storage/download-limits';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';
import { chunked, tarball, tgz, zipArchive, zipLink, type TarEntry } from './builders';

const what = 'extracting m';
const never = new AbortController().signal;
const tokenizer: FileSelection = { allowPatterns: ['*.json', 'tokenizer*'], ignorePatterns: ['skip/'] };

const tokenizerTar: TarEntry[] = [
  { name: 'model/', type: '5' },
  { name: 'model/weights.safetensors', content: 'weights' },
  { name: 'config.json', content: '{}' },
  { name: 'tokenizer.model', content: 'spm' },
  { name: 'skip/', type: '5' },
  { name: 'skip/extra.json', content: '{}' },
  { name: 'nested/', type: '5' },
  { name: 'nested/vocab.json', content: '{"a":1}' },
  { name: 'tokenizer.json', type: '2', linkname: 'nested/vocab.json' },
];
const selectedTree = [
  'config.json',
  'nested/',
  'nested/vocab.json',
  'tokenizer.json -> nested/vocab.json',
  'tokenizer.model',
];

describe('extractStream with a selection', () => {
  const tmp = useTempDir('extract-selection');
  let target: string;

  beforeEach(async () => {
    target = path.join(tmp.path, `target-${Math.random().toString(36).slice(2)}`);
    await mkdir(target);
  });

  const extract = (bytes: Buffer, format: ArchiveFormat, select: FileSelection) =>
    extractStream(chunked(bytes), format, target, {
      what,
      signal: never,
      limits: defaultDownloadLimits,
      select,
    });

  it.each([
    ['a tar', tarball(tokenizerTar)],
    ['a tar.gz', tgz(tokenizerTar)],
  ])(
    'writes only the files and links of %s that the patterns take, and only their dirs',
    async (_label, bytes) => {
      await extract(bytes, 'tar', tokenizer);
      expect(await listTree(target)).toEqual(selectedTree);
    },
  );

  it('writes only the entries of a zip that the patterns take, and only their dirs', async () => {
    const zip = zipArchive([
      { name: 'model/' },
      { name: 'model/weights.safetensors', content: 'weights' },
      { name: 'config.json', content: '{}' },
      { name: 'tokenizer.model', content: 'spm' },
      { name: 'skip/extra.json', content: '{}' },
      { name: 'nested/vocab.json', content: '{"a":1}' },
      zipLink('tokenizer.json', 'nested/vocab.json'),
    ]);
    const file = path.join(tmp.path, 'model.zip');
    await writeFile(file, zip);
    await extractFile(file, 'zip', target, { what, signal: never, select: tokenizer });
    expect(await listTree(target)).toEqual(selectedTree);
  });

  it('extracts a hard link whose target the patterns take too', async () => {
    const entries: TarEntry[] = [
      { name: 'a.json', content: '{}' },
      { name: 'b.json', type: '1', linkname: 'a.json' },
    ];
    await extract(tarball(entries), 'tar', { allowPatterns: ['*.json'] });
    expect(await readFile(path.join(target, 'b.json'), 'utf8')).toBe('{}');
  });

  it('refuses a hard link the patterns take to a file they leave out', async () => {
    const entries: TarEntry[] = [
      { name: 'weights.bin', content: 'x' },
      { name: 'tokenizer.json', type: '1', linkname: 'weights.bin' },
    ];
    const error = await effectError(extract(tarball(entries), 'tar', { allowPatterns: ['*.json'] }));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain("hard-links weights.bin, which the model's patterns leave out");
  });

  it.each<[string, ArchiveFormat, Buffer]>([
    ['tar', 'tar', tarball(tokenizerTar)],
    [
      'zip',
      'zip',
      zipArchive([
        { name: 'a.bin', content: 'x' },
        { name: 'b.bin', content: 'y' },
      ]),
    ],
  ])("fails for good when the patterns take none of a %s's files", async (_label, format, bytes) => {
    const error = await effectError(extract(bytes, format, { allowPatterns: ['*.onnx'] }));
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toMatch(
      /^extracting m: the patterns allow=\["\*\.onnx"\] ignore=\[\] select none of its \d+ files$/,
    );
  });

  it('still refuses a hostile entry the patterns leave out', async () => {
    const entries: TarEntry[] = [
      { name: 'config.json', content: '{}' },
      { name: '../evil.bin', content: 'x' },
    ];
    const error = await effectError(extract(tarball(entries), 'tar', { allowPatterns: ['*.json'] }));
    expect(error).toMatchObject({ kind: 'refused' });
  });

  it('counts an entry left out against the entry cap, not its bytes against the model cap', async () => {
    const entries: TarEntry[] = [
      { name: 'big.bin', content: 'x'.repeat(4096) },
      { name: 'config.json', content: '{}' },
    ];
    const limits = { ...defaultDownloadLimits, maxModelBytes: 1024 };
    await extractStream(chunked(tarball(entries)), 'tar', target, {
      what,
      signal: never,
      limits,
      select: { allowPatterns: ['*.json'] },
    });
    expect(await listTree(target)).toEqual(['config.json']);
    const capped = { ...defaultDownloadLimits, maxArchiveEntries: 1 };
    const error = await effectError(
      extractStream(chunked(tarball(entries)), 'tar', target, {
        what,
        signal: never,
        limits: capped,
        select: { allowPatterns: ['*.json'] },
      }),
    );
    expect(error).toMatchObject({ kind: 'too-large' });
  });
});
