/**
 * Hostile archive entries — escapes, links out, hard links, duplicates, special files, huge names — over local
 * storage and HTTP through the production store: each fails for good, nothing lands outside, no staging dir stays.
 */
import path from 'node:path';
import type { EffectErrorKind } from '../../../src/core/errors';
import {
  tarball,
  tgz,
  zipArchive,
  zipLink,
  type TarEntry,
  type ZipEntry,
} from '../../storage/archive/builders';
import { useArchiveBench, type Provider } from './archive-bench';

interface Case {
  readonly label: string;
  readonly file: string;
  /** The archive, given the absolute path of the dir it aims at. */
  readonly bytes: (outside: string) => Buffer;
  readonly kind: EffectErrorKind;
  /** Part of the reason the user reads. */
  readonly why: string;
}

const tarCase = (
  label: string,
  entries: (outside: string) => TarEntry[],
  why: string,
  gzip = false,
): Case => ({
  label: `${gzip ? 'tar.gz' : 'tar'}: ${label}`,
  file: `${label.replace(/\W+/g, '-')}.${gzip ? 'tgz' : 'tar'}`,
  bytes: (outside) => (gzip ? tgz : tarball)(entries(outside)),
  kind: why.startsWith('appears twice') ? 'invalid-archive' : 'refused',
  why,
});

const zipCase = (label: string, entries: (outside: string) => ZipEntry[], why: string): Case => ({
  label: `zip: ${label}`,
  file: `${label.replace(/\W+/g, '-')}.zip`,
  bytes: (outside) => zipArchive(entries(outside)),
  kind: why.startsWith('appears twice') ? 'invalid-archive' : 'refused',
  why,
});

// From the staging dir <root>/models/.tmp-m-*, ../../outside is the dir beside the model dir.
const up = '../../outside';
const file = (name: string): TarEntry => ({ name, content: 'evil' });
const zfile = (name: string): ZipEntry => ({ name, content: 'evil' });

const cases: ReadonlyArray<Case> = [
  // Escapes by name.
  tarCase('dot-dot', () => [file(`${up}/evil`)], "its path contains '..'"),
  tarCase('dot-dot inside', () => [file(`a/../${up}/evil`)], "its path contains '..'", true),
  tarCase('absolute', (outside) => [file(path.join(outside, 'evil'))], 'its path is absolute'),
  tarCase('backslashes', () => [file('..\\..\\outside\\evil')], "its path contains '..'"),
  tarCase('drive letter', () => [file('C:\\outside\\evil')], 'its path is absolute', true),
  tarCase('UNC path', () => [file('\\\\server\\share\\evil')], 'its path is absolute'),
  zipCase('dot-dot', () => [zfile(`${up}/evil`)], "its path contains '..'"),
  zipCase('absolute', (outside) => [zfile(path.join(outside, 'evil'))], 'its path is absolute'),
  zipCase('backslashes', () => [zfile('a\\..\\..\\..\\outside\\evil')], "its path contains '..'"),
  zipCase('drive letter', () => [zfile('C:/outside/evil')], 'its path is absolute'),
  // Symlinks out, alone and in chains, and entries written through them.
  tarCase('symlink out', () => [{ name: 'l', type: '2', linkname: up }], 'outside the model dir'),
  tarCase(
    'absolute symlink',
    (o) => [{ name: 'l', type: '2', linkname: o }],
    'it links to the absolute path',
  ),
  tarCase(
    'symlink chain',
    () => [
      { name: 'a', type: '2', linkname: '.' },
      { name: 'b', type: '2', linkname: 'a/..' },
    ],
    // Each link fine alone; the walk after the extraction finds where b really leads.
    'it leads outside the model dir',
    true,
  ),
  tarCase(
    'file through a symlink',
    () => [{ name: 'l', type: '2', linkname: '.' }, file('l/x')],
    'it would be written through the symlink l',
  ),
  tarCase(
    'symlink replaced by a dir',
    () => [
      { name: 'l', type: '2', linkname: 'd' },
      { name: 'l/', type: '5' },
    ],
    'it would be written through the symlink l',
  ),
  zipCase('symlink out', () => [zipLink('l', up)], 'outside the model dir'),
  zipCase('absolute symlink', (o) => [zipLink('l', o)], 'it links to the absolute path'),
  zipCase('symlink chain', () => [zipLink('a', '.'), zipLink('b', 'a/..')], 'it leads outside the model dir'),
  zipCase('file through a symlink', () => [zipLink('l', '.'), zfile('l/x')], 'through the symlink l'),
  // Hard links out and through links.
  tarCase(
    'hard link out',
    () => [{ name: 'h', type: '1', linkname: `${up}/secret` }],
    "its path contains '..'",
  ),
  tarCase('absolute hard link', (o) => [{ name: 'h', type: '1', linkname: o }], 'its path is absolute'),
  tarCase(
    'hard link through a symlink',
    () => [
      { name: 'up', type: '2', linkname: '.' },
      { name: 'h', type: '1', linkname: 'up/x' },
    ],
    'hard-links through the symlink up/x',
    true,
  ),
  tarCase(
    'hard link to the model dir',
    () => [{ name: 'h', type: '1', linkname: '.' }],
    'hard-links the model dir',
  ),
  // Duplicates: the second entry would silently replace (tar) or fail (zip) the first.
  tarCase('duplicate file', () => [file('m.bin'), file('m.bin')], 'appears twice'),
  tarCase(
    'file then symlink',
    () => [file('m.bin'), { name: 'm.bin', type: '2', linkname: 'x' }],
    'appears twice',
  ),
  zipCase('duplicate file', () => [zfile('m.bin'), zfile('./m.bin')], 'appears twice'),
  // Special files.
  tarCase('character device', () => [{ name: 'null', type: '3' }], 'it is not a file, directory or link'),
  tarCase('block device', () => [{ name: 'sda', type: '4' }], 'it is not a file, directory or link'),
  tarCase('FIFO', () => [{ name: 'pipe', type: '6' }], 'it is not a file, directory or link', true),
  zipCase('FIFO', () => [{ name: 'pipe', mode: 0o010644 }], 'it is not a file, directory or link'),
  zipCase('device', () => [{ name: 'null', mode: 0o020666 }], 'it is not a file, directory or link'),
  // Names no file system takes, and names that hide their meaning.
  tarCase(
    'huge pax name',
    () => [{ name: 'short', content: 'x', pax: { path: `${'d/'.repeat(30_000)}x` } }],
    'its name is longer than 4096 bytes',
  ),
  tarCase('long name part', () => [{ name: 'x', pax: { path: 'n'.repeat(300) } }], 'longer than 255 bytes'),
  zipCase('huge name', () => [zfile(`${'d/'.repeat(3000)}x`)], 'its name is longer than 4096 bytes'),
  tarCase(
    'pax path escaping',
    () => [{ name: 'ok', content: 'x', pax: { path: `${up}/evil` } }],
    "contains '..'",
  ),
];

const providers: ReadonlyArray<Provider> = ['local', 'http'];

describe('hostile archive entries', () => {
  const bench = useArchiveBench();

  it.each(cases.flatMap((c) => providers.map((provider) => [c.label, provider, c] as const)))(
    '%s over %s: fails for good, nothing written outside the model dir, no staging dir left',
    async (_label, provider, { file: name, bytes, kind, why }) => {
      const uri = await bench.place(provider, name, bytes(bench.outside));
      const error = await bench.install(uri);
      expect(error).toMatchObject({ kind, retryable: false });
      expect(error?.message).toContain(why);
      expect(await bench.leftovers()).toEqual(['models/', 'outside/']);
    },
  );

  /** Well-formed archives with inside links, and what each installs (the marker aside). */
  const wellFormed: ReadonlyArray<{
    what: string;
    file: string;
    entries: TarEntry[];
    installed: string[];
  }> = [
    {
      what: 'a well-formed archive with inside links (the control)',
      file: 'good.tgz',
      entries: [
        { name: 'model/1/model.pt', content: 'weights' },
        { name: 'model/latest', type: '2', linkname: '1/model.pt' },
        { name: 'model/copy.pt', type: '1', linkname: 'model/1/model.pt' },
      ],
      installed: [
        'models/m/model/',
        'models/m/model/1/',
        'models/m/model/1/model.pt',
        'models/m/model/copy.pt',
        'models/m/model/latest -> 1/model.pt',
      ],
    },
    {
      what: 'an archive made by tar -C dir . with a hard link and links to the model dir itself',
      file: 'dot.tgz',
      entries: [
        { name: './', type: '5' },
        { name: './1/', type: '5' },
        { name: './1/model.pt', content: 'weights' },
        { name: './copy.pt', type: '1', linkname: './1/model.pt' },
        { name: './self', type: '2', linkname: '.' },
        { name: './1/up', type: '2', linkname: '..' },
      ],
      installed: [
        'models/m/1/',
        'models/m/1/model.pt',
        'models/m/1/up -> ..',
        'models/m/copy.pt',
        'models/m/self -> .',
      ],
    },
  ];

  it.each(wellFormed.flatMap((archive) => providers.map((provider) => ({ ...archive, provider }))))(
    'installs $what over $provider',
    async ({ file, entries, installed, provider }) => {
      const uri = await bench.place(provider, file, tgz(entries));
      expect(await bench.install(uri)).toBeUndefined();
      expect((await bench.leftovers()).filter((entry) => !entry.startsWith('models/m/SUCCESS.'))).toEqual([
        'models/',
        'models/m/',
        ...installed,
        'outside/',
      ]);
      await bench.clear();
    },
  );
});
