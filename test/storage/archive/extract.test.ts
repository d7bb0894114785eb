/** Tests of archive extraction on real temp dirs: tar, tar.gz and zip from streams and files, and hostile archives. */
import fs, { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  archiveFormatOf,
  extractFile,
  extractStream,
  type ArchiveFormat,
} from '../../../src/storage/archive/extract';
import { defaultDownloadLimits } from '../../../src/storage/download-limits';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import {
  chunked,
  tarball,
  tarHeader,
  tgz,
  zipArchive,
  zipLink,
  type TarEntry,
  type ZipEntry,
} from './builders';
import { useTempDir } from '../../helpers/temp-dir';

const what = 'extracting m';
const never = new AbortController().signal;
const options = { what, signal: never, limits: defaultDownloadLimits };

/** `bytes` as a stream of chunks of at most `size` bytes. */
describe('archiveFormatOf', () => {
  it.each([
    ['m.tar', 'tar'],
    ['m.tar.gz', 'tar'],
    ['M.TGZ', 'tar'],
    ['model.zip', 'zip'],
    ['m.Zip', 'zip'],
    // Compressed otherwise (KServe's initializer extracts them): extracting says what it cannot read.
    ['m.tar.bz2', 'tar'],
    ['m.tar.xz', 'tar'],
    ['m.tbz2', 'tar'],
    ['M.TXZ', 'tar'],
    ['m.bz2', undefined],
    ['m.xz', undefined],
    ['model.joblib', undefined],
    ['m.gz', undefined],
    ['tar', undefined],
    ['', undefined],
  ])('reads %j as %s', (name, format) => {
    expect(archiveFormatOf(name)).toBe(format);
  });
});

/** A tar of `model.bin` ("x") compressed by `xz -9e`, `bzip2 -9` and `zstd -19`. */
const otherwiseCompressedTars = {
  xz: '/Td6WFoAAATm1rRGAgAhARwAAAAQz1jM4Cf/AGNdADabyLBXF+GjE9seWTnUmplISClHK5ULnS8dbRA3Dm0qP9jEenVBCPMMX4XYTwnTfD0/y2/dw4KuK6H0Wgve0JvejuN4gqj4cZxTRwUypQiZ7nUjocHEToeAnLUfO3zdDCUOAAAAzqIk0BUX/KIAAX+AUAAAAPnUykOxxGf7AgAAAAAEWVo=',
  bzip2:
    'QlpoOTFBWSZTWfIlEZYAAHL7hMmAAEBgAXWAAIB2J55AAACACCAAVDSjJpo0Afqg02p6gSU0mgaDQAAdfcRe9CD2CSESdKkvjVAtckgYHN2xy+ZJF6DN0RfIwNQ0Kzn53RSLQsqM8M30ERAPxdyRThQkPIlEZYA=',
  zstd: 'KLUv/WQAJz0CAOKCChGg7bAh1ITfQtX4Hk3K+D9nCo5+u82ZrTwH7acHCar3rbcQ42bJAIXOrgsgsJkH+4XH52mMAWD/n2mPDuCAQQPsptAF5ZfuiQ==',
} as const;

describe('extractStream and extractFile', () => {
  const tmp = useTempDir('extract');
  let target: string;

  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  // Python's tarfile (KServe's initializer) reads them; without a decoder, a clear permanent failure, never a model
  // server handed an archive it cannot read nor an attempt retried for bytes that will not change.
  it.each(['xz', 'bzip2', 'zstd'] as const)(
    'fails for good, naming the compression, on a tar compressed with %s',
    async (compression) => {
      const bytes = Buffer.from(otherwiseCompressedTars[compression], 'base64');
      for (const run of [
        () => extractStream(chunked(bytes, 3), 'tar', target, options),
        async () => {
          const file = path.join(tmp.path, `m.tar.${compression}`);
          await writeFile(file, bytes);
          return extractFile(file, 'tar', target, options);
        },
      ]) {
        const error = await effectError(run());
        expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
        expect(error.message).toBe(
          `${what}: invalid archive: the tar is compressed with ${compression}, which modelsync does not read ` +
            '(only gzip: .tar.gz, .tgz)',
        );
        expect(await listTree(target)).toEqual([]);
      }
    },
  );

  /** Extracts `bytes` both ways: streamed, and from a file next to the target. */
  const extractBoth = async (bytes: Buffer, format: ArchiveFormat): Promise<ReadonlyArray<string[]>> => {
    await extractStream(chunked(bytes), format, target, options);
    const streamed = await listTree(target);
    await rm(target, { recursive: true });
    await mkdir(target);
    const file = path.join(tmp.path, `archive.${format}`);
    await writeFile(file, bytes);
    await extractFile(file, format, target, options);
    return [streamed, await listTree(target)];
  };

  const nestedTar: TarEntry[] = [
    { name: 'model/', type: '5' },
    { name: 'model/1/', type: '5' },
    { name: 'model/1/model.pt', content: 'weights' },
    { name: 'config/settings.json', content: '{"a":1}' },
    { name: 'model/latest', type: '2', linkname: '1/model.pt' },
    { name: 'model/copy.pt', type: '1', linkname: 'model/1/model.pt' },
  ];
  const nestedTree = [
    'config/',
    'config/settings.json',
    'model/',
    'model/1/',
    'model/1/model.pt',
    'model/copy.pt',
    'model/latest -> 1/model.pt',
  ];

  it.each([
    ['a tar', tarball(nestedTar)],
    ['a tar.gz (by its magic bytes)', tgz(nestedTar)],
  ])('extracts %s with nested dirs, a symlink and a hard link', async (_label, bytes) => {
    expect(await extractBoth(bytes, 'tar')).toEqual([nestedTree, nestedTree]);
    expect(await readFile(path.join(target, 'model', 'latest'), 'utf8')).toBe('weights');
    expect(await readFile(path.join(target, 'model', 'copy.pt'), 'utf8')).toBe('weights');
    expect((await stat(path.join(target, 'config'))).mode & 0o777).toBe(0o755);
  });

  it('extracts a zip with nested dirs and an inside symlink, leaving no temporary file', async () => {
    const zip = zipArchive([
      { name: 'model/' },
      { name: 'model/1/model.pt', content: 'weights' },
      { name: 'config.json', content: '{}' },
      zipLink('model/latest', '1/model.pt'),
    ]);
    const tree = ['config.json', 'model/', 'model/1/', 'model/1/model.pt', 'model/latest -> 1/model.pt'];
    expect(await extractBoth(zip, 'zip')).toEqual([tree, tree]);
    expect(await readFile(path.join(target, 'model', 'latest'), 'utf8')).toBe('weights');
    expect((await stat(path.join(target, 'model', '1'))).mode & 0o777).toBe(0o755);
  });

  // The model store hands the extractor its staging dir by handle (/proc/self/fd/<n>), a path lstat calls a link.
  it.each([
    ['a tar', tarball],
    ['a tar.gz', tgz],
  ])(
    'extracts %s of ./ entries with hard links and links to the model dir itself into a dir reached by its handle',
    async (_label, build) => {
      const bytes = build([
        { name: './', type: '5' },
        { name: './t', content: 'weights' },
        { name: './h', type: '1', linkname: './t' },
        { name: './self', type: '2', linkname: '.' },
        { name: './sub/', type: '5' },
        { name: './sub/f', content: 'f' },
        { name: './sub/g', type: '1', linkname: './sub/f' },
        { name: './sub/up', type: '2', linkname: '..' },
      ]);
      const held = await open(target, constants.O_RDONLY | constants.O_DIRECTORY);
      try {
        await extractStream(chunked(bytes), 'tar', `/proc/self/fd/${held.fd}`, options);
      } finally {
        await held.close();
      }
      expect(await listTree(target)).toEqual([
        'h',
        'self -> .',
        'sub/',
        'sub/f',
        'sub/g',
        'sub/up -> ..',
        't',
      ]);
      expect(await readFile(path.join(target, 'h'), 'utf8')).toBe('weights');
      expect(await readFile(path.join(target, 'sub', 'up', 'self', 't'), 'utf8')).toBe('weights');
    },
  );

  // The model server reads the model dir as another user (deploy/base: modelsync 65532, the server 1000).
  it('makes every file readable by all, whatever read bits the tar gives it', async () => {
    const bytes = tarball([
      { name: 'private.bin', content: 'x', mode: 0o600 },
      { name: 'group.bin', content: 'x', mode: 0o640 },
      { name: 'none.bin', content: 'x', mode: 0o000 },
      { name: 'run.sh', content: '#!/bin/sh', mode: 0o700 },
    ]);
    await extractStream(chunked(bytes), 'tar', target, options);
    const modes = await Promise.all(
      ['private.bin', 'group.bin', 'none.bin', 'run.sh'].map(
        async (file) => (await stat(path.join(target, file))).mode & 0o7777,
      ),
    );
    expect(modes).toEqual([0o644, 0o644, 0o444, 0o744]);
  });

  it('makes a tar symlink at the name tar writes its files at, a backslash a character of it', async () => {
    const bytes = tarball([
      { name: 'a\\b', content: 'x' },
      { name: 'l\\m', type: '2', linkname: 'a\\b' },
    ]);
    await extractStream(chunked(bytes), 'tar', target, options);
    expect(await listTree(target)).toEqual(['a\\b', 'l\\m -> a\\b']);
  });

  it('strips setuid, setgid, sticky and group/other write bits, keeping the executable bits', async () => {
    const bytes = tarball([
      { name: 'run.sh', content: '#!/bin/sh', mode: 0o6777 },
      { name: 'data', content: 'x', mode: 0o666 },
      { name: 'open/', type: '5', mode: 0o1777 },
    ]);
    await extractStream(chunked(bytes), 'tar', target, options);
    expect((await stat(path.join(target, 'run.sh'))).mode & 0o7777).toBe(0o755);
    expect((await stat(path.join(target, 'data'))).mode & 0o7777).toBe(0o644);
    expect((await stat(path.join(target, 'open'))).mode & 0o7777).toBe(0o755);
  });

  describe('hostile tars', () => {
    it.each<[string, TarEntry[], string]>([
      ['../evil', [{ name: '../evil', content: 'x' }], "its path contains '..'"],
      ['a/../../evil', [{ name: 'a/../../evil', content: 'x' }], "its path contains '..'"],
      ['/tmp/evil', [{ name: '/tmp/evil', content: 'x' }], 'its path is absolute'],
      ['link', [{ name: 'link', type: '2', linkname: '../outside' }], 'outside the model dir'],
      ['abs-link', [{ name: 'abs-link', type: '2', linkname: '/etc/passwd' }], 'absolute path /etc/passwd'],
      ['hard', [{ name: 'hard', type: '1', linkname: '../outside' }], "contains '..'"],
      ['hard', [{ name: 'hard', type: '1', linkname: '/etc/shadow' }], 'its path is absolute'],
      ['dev', [{ name: 'dev', type: '3' }], 'not a file, directory or link'],
      ['fifo', [{ name: 'fifo', type: '6' }], 'not a file, directory or link'],
      [
        'l/x',
        [
          { name: 'l', type: '2', linkname: '.' },
          { name: 'l/x', content: 'x' },
        ],
        'through the symlink l',
      ],
      [
        'h',
        [
          { name: 'up', type: '2', linkname: '.' },
          { name: 'h', type: '1', linkname: 'up/x' },
        ],
        'hard-links through the symlink up/x',
      ],
    ])('refuses the entry %s, writing nothing outside', async (entryName, entries, why) => {
      const error = await effectError(extractStream(chunked(tarball(entries)), 'tar', target, options));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toContain(`${what}: refusing archive entry ${JSON.stringify(entryName)}: `);
      expect(error.message).toContain(why);
      expect(await readdir(tmp.path)).toEqual(['target']);
    });

    it('refuses symlinks that combine into a way out, each fine alone', async () => {
      const entries: TarEntry[] = [
        { name: 'a', type: '2', linkname: '.' },
        { name: 'b', type: '2', linkname: 'a/..' },
      ];
      const error = await effectError(extractStream(chunked(tarball(entries)), 'tar', target, options));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toBe(`${what}: refusing archive entry "b": it leads outside the model dir`);
    });

    it.each<[string, TarEntry[]]>([
      ['a hard link to an entry it does not hold', [{ name: 'h', type: '1', linkname: 'missing' }]],
      ['garbage after the gzip magic', []],
    ])('fails as an invalid archive on %s', async (label, entries) => {
      const bytes =
        entries.length > 0
          ? tarball(entries)
          : Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.from('garbage!')]);
      const error = await effectError(extractStream(chunked(bytes), 'tar', target, options));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(error.message).toContain(`${what}: invalid archive: `);
    });
  });

  describe('hostile zips', () => {
    it.each<[string, ZipEntry[], string]>([
      ['../evil', [{ name: '../evil', content: 'x' }], `"../evil": its path contains '..'`],
      ['/tmp/evil', [{ name: '/tmp/evil', content: 'x' }], '"/tmp/evil": its path is absolute'],
      // Backslashes are separators in zips made on Windows; yauzl turns them into slashes.
      ['a\\..\\evil', [{ name: 'a\\..\\evil', content: 'x' }], `"a/../evil": its path contains '..'`],
      [
        'leak',
        [{ name: 'ok.txt', content: 'x' }, zipLink('leak', '../../etc/passwd')],
        '"leak": it links to ../../etc/passwd',
      ],
      ['abs', [zipLink('abs', '/etc/passwd')], '"abs": it links to the absolute path /etc/passwd'],
      [
        'l/x',
        [zipLink('l', '.'), { name: 'l/x', content: 'x' }],
        '"l/x": it would be written through the symlink l',
      ],
      ['long', [zipLink('long', 'x'.repeat(5000))], '"long": its link target is too long'],
      ['fifo', [{ name: 'fifo', mode: 0o010644 }], '"fifo": it is not a file, directory or link'],
      ['dev', [{ name: 'dev', mode: 0o020644 }], '"dev": it is not a file, directory or link'],
      ['sock', [{ name: 'sock', mode: 0o140644 }], '"sock": it is not a file, directory or link'],
    ])('refuses the entry %s, writing nothing outside', async (_name, entries, why) => {
      const error = await effectError(extractStream(chunked(zipArchive(entries)), 'zip', target, options));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toContain(`${what}: refusing archive entry ${why}`);
      expect(await readdir(tmp.path)).toEqual(['target']);
      expect((await listTree(target)).filter((entry) => entry.startsWith('.modelsync-'))).toEqual([]);
    });

    it('refuses zip symlinks that combine into a way out', async () => {
      const zip = zipArchive([zipLink('a', '.'), zipLink('b', 'a/..')]);
      const error = await effectError(extractStream(chunked(zip), 'zip', target, options));
      expect(error).toMatchObject({ kind: 'refused', retryable: false });
      expect(error.message).toContain('refusing archive entry "b": it leads outside the model dir');
    });

    it('fails as an invalid archive when it holds the same file twice, keeping the first', async () => {
      const zip = zipArchive([
        { name: 'model.pt', content: 'first' },
        { name: 'model.pt', content: 'second' },
      ]);
      const error = await effectError(extractStream(chunked(zip), 'zip', target, options));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(await readFile(path.join(target, 'model.pt'), 'utf8')).toBe('first');
    });

    it.each([false, true])(
      'fails as an invalid archive when an entry does not match its CRC-32 (deflated: %s)',
      async (deflate) => {
        const zip = zipArchive([{ name: 'model.pt', content: 'weights', deflate, crc: 12345 }]);
        const error = await effectError(extractStream(chunked(zip), 'zip', target, options));
        expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
        expect(error.message).toBe(`${what}: invalid archive: entry "model.pt" fails its CRC-32 check`);
      },
    );

    it('fails as an invalid archive when it is no zip at all, leaving no temporary file', async () => {
      const bytes = Buffer.from('this is not a zip file at all, not even close to one');
      const error = await effectError(extractStream(chunked(bytes), 'zip', target, options));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(await readdir(target)).toEqual([]);
    });
  });

  it('passes an error of the source through unchanged, leaving no temporary file', async () => {
    const lost = new Error('the connection broke');
    async function* breaking(): AsyncGenerator<Uint8Array> {
      yield* chunked(tarball([{ name: 'a', content: 'a' }]).subarray(0, 700));
      throw lost;
    }
    for (const format of ['tar', 'zip'] as const) {
      await expect(extractStream(breaking(), format, target, options)).rejects.toBe(lost);
    }
    expect((await readdir(target)).filter((name) => name.startsWith('.modelsync-'))).toEqual([]);
  });

  it.each(['tar', 'zip'] as const)(
    'stops a %s promptly when the signal aborts mid-stream',
    async (format) => {
      const controller = new AbortController();
      const stalled = Readable.from(
        (async function* () {
          yield tarHeader({ name: 'big.bin' }, 1_000_000);
          await new Promise(() => undefined);
        })(),
      );
      setTimeout(() => controller.abort(), 50);
      const error = await effectError(
        extractStream(stalled, format, target, { ...options, signal: controller.signal }),
      );
      expect(error).toMatchObject({ kind: 'aborted', retryable: true, message: `${what} aborted` });
    },
  );

  it('starts nothing when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const bytes = tarball([{ name: 'a', content: 'a' }]);
    const error = await effectError(
      extractStream(chunked(bytes), 'tar', target, { ...options, signal: controller.signal }),
    );
    expect(error).toMatchObject({ kind: 'aborted', retryable: true });
    expect(await readdir(target)).toEqual([]);
  });

  it.each(['tar', 'zip'] as const)(
    'fails with a permanent filesystem error when the %s file is missing',
    async (format) => {
      const missing = path.join(tmp.path, `missing.${format}`);
      const error = await effectError(extractFile(missing, format, target, options));
      expect(error).toMatchObject({ kind: 'filesystem', retryable: false });
      expect(error.message).toContain('ENOENT');
    },
  );

  it('fails with a filesystem error when the target dir is missing', async () => {
    const error = await effectError(
      extractStream(chunked(tarball([])), 'tar', path.join(tmp.path, 'nowhere'), options),
    );
    expect(error).toMatchObject({ kind: 'filesystem', retryable: false });
  });
});

describe('a dir of the target a neighbour made a link (the model server sharing the volume, same uid or root)', () => {
  const tmp = useTempDir('extract-swapped');

  it.each([
    ['a file', [{ name: 'sub/a.bin', content: 'weights' }]],
    ['a dir', [{ name: 'sub/deeper/' }, { name: 'top.bin', content: 'x' }]],
    ['a symlink', [{ name: 'top.bin', content: 'x' }, zipLink('sub/latest', '../top.bin')]],
  ] as const)('writes %s of a zip through no link it did not make', async (_what, entries) => {
    const [target, outside] = [path.join(tmp.path, 'target'), path.join(tmp.path, 'outside')];
    await Promise.all([mkdir(target), mkdir(outside)]);
    // As if swapped in while the entries before it were written.
    await symlink(outside, path.join(target, 'sub'));
    await extractStream(chunked(zipArchive(entries)), 'zip', target, options).catch(() => undefined);
    expect(await readdir(outside)).toEqual([]);
  });

  // tar checks the dirs on an entry's way for links, then opens the entry by path: a swap in between was followed.
  it("writes no entry of a tar through a dir a neighbour swaps for a link between tar's check and its write", async () => {
    const [target, outside] = [path.join(tmp.path, 'target'), path.join(tmp.path, 'outside')];
    await Promise.all([mkdir(target), mkdir(outside)]);
    const sub = path.join(target, 'sub');
    const open = fs.open.bind(fs) as (...args: unknown[]) => void;
    let swapped = false;
    // At the first open for writing once sub/ is there: the window tar leaves after its check.
    const opening = jest.spyOn(fs, 'open').mockImplementation((...args: unknown[]) => {
      const flags = args[1];
      const writing = flags !== undefined && flags !== 'r' && flags !== constants.O_RDONLY;
      if (!swapped && writing && String(args[0]).startsWith(target) && fs.existsSync(sub)) {
        swapped = true;
        fs.renameSync(sub, path.join(target, 'moved'));
        fs.symlinkSync(outside, sub);
      }
      open(...args);
    });
    try {
      const entries = [
        { name: 'sub/a.bin', content: 'first' },
        { name: 'sub/b.bin', content: 'second' },
      ];
      await extractStream(chunked(tarball(entries)), 'tar', target, options).catch(() => undefined);
    } finally {
      opening.mockRestore();
    }
    expect(await readdir(outside)).toEqual([]);
  });
});
