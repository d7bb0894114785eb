/** Tests of extraction's caps and completeness: bombs, entry counts, declared sizes, archives cut short. */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { extractFile, extractStream, type ArchiveFormat } from '../../../src/storage/archive/extract';
import type { DownloadLimits } from '../../../src/storage/download-limits';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';
import { chunked, tarball, tgz, tgzBomb, zipArchive, zipBomb, type TarEntry } from './builders';

const what = 'extracting m';
const never = new AbortController().signal;
const MiB = 2 ** 20;

const files = (count: number): TarEntry[] =>
  Array.from({ length: count }, (_, i) => ({ name: `f${i}`, content: 'x' }));

describe('extraction limits', () => {
  const tmp = useTempDir('archive-limits');
  let target: string;

  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  const extract = (bytes: Buffer, format: ArchiveFormat, limits: Partial<DownloadLimits> = {}) =>
    extractStream(chunked(bytes, 64 * 1024), format, target, {
      what,
      signal: never,
      limits: { ...cliDownloadLimits, ...limits },
    });

  describe('bombs', () => {
    // 64 MiB of zeros squeeze into ~64 KiB: ~1000:1, near gzip's theoretical best.
    let tgz64: Buffer;
    let zip64: Buffer;
    beforeAll(async () => {
      [tgz64, zip64] = await Promise.all([tgzBomb(64 * MiB), zipBomb(64 * MiB)]);
    });

    it.each([
      ['tar', 'a tar.gz', () => tgz64],
      ['zip', 'a zip', () => zip64],
    ] as const)('refuses %s bomb for good past the ratio cap (%s)', async (format, _label, bytes) => {
      const error = await effectError(extract(bytes(), format));
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(error.message).toMatch(
        new RegExp(
          `^${what}: too large: it expands more than 200 times \\(.* from .*\\) \\(--max-archive-ratio\\)$`,
        ),
      );
    });

    it('refuses a zip bomb before writing any of it', async () => {
      await extract(zip64, 'zip').catch(() => undefined);
      expect(await listTree(target)).toEqual([]);
    });

    it('extracts the same bombs when the ratio cap allows them', async () => {
      await extract(tgz64, 'tar', { maxArchiveRatio: 2000 });
      await extract(zip64, 'zip', { maxArchiveRatio: 2000 });
      expect(await listTree(target)).toEqual(['zeros-0.bin', 'zeros.bin']);
    });

    it('lets a small archive expand past any ratio within the first 16 MiB', async () => {
      await extract(await tgzBomb(8 * MiB), 'tar', { maxArchiveRatio: 2 });
      expect(await listTree(target)).toEqual(['zeros.bin']);
    });
  });

  describe('--max-model-bytes', () => {
    it.each([
      [
        'tar',
        tarball([
          { name: 'a', content: 'x'.repeat(600) },
          { name: 'b', content: 'y'.repeat(600) },
        ]),
      ],
      [
        'zip',
        zipArchive([
          { name: 'a', content: 'x'.repeat(600) },
          { name: 'b', content: 'y'.repeat(600) },
        ]),
      ],
    ] as const)(
      'refuses a %s whose entries declare more than the cap, before writing the entry that passes it',
      async (format, bytes) => {
        const error = await effectError(extract(bytes, format, { maxModelBytes: 1000 }));
        expect(error).toMatchObject({ kind: 'too-large', retryable: false });
        expect(error.message).toBe(
          `${what}: too large: it expands to more than 1000 bytes (--max-model-bytes)`,
        );
        expect((await listTree(target)).filter((entry) => entry === 'b')).toEqual([]);
      },
    );
  });

  describe('--max-archive-entries', () => {
    it('refuses a tar of more entries than the cap at the first entry past it', async () => {
      const error = await effectError(extract(tarball(files(101)), 'tar', { maxArchiveEntries: 100 }));
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(error.message).toBe(
        `${what}: too large: it holds more than 100 entries (--max-archive-entries)`,
      );
      expect((await readdir(target)).length).toBeLessThanOrEqual(100);
    });

    it('refuses a zip of more entries than the cap from its central directory, writing nothing', async () => {
      const zip = zipArchive(files(101).map(({ name }) => ({ name, content: 'x' })));
      const error = await effectError(extract(zip, 'zip', { maxArchiveEntries: 100 }));
      expect(error).toMatchObject({ kind: 'too-large', retryable: false });
      expect(error.message).toBe(
        `${what}: too large: it holds 101 entries, more than 100 (--max-archive-entries)`,
      );
      expect(await listTree(target)).toEqual([]);
    });

    it.each(['tar', 'zip'] as const)('extracts a %s of exactly the cap', async (format) => {
      const bytes =
        format === 'tar'
          ? tarball(files(100))
          : zipArchive(files(100).map(({ name }) => ({ name, content: 'x' })));
      await extract(bytes, format, { maxArchiveEntries: 100 });
      expect((await readdir(target)).length).toBe(100);
    });
  });

  describe('archives cut short', () => {
    const entries: TarEntry[] = [
      { name: 'dir/', type: '5' },
      { name: 'dir/a.bin', content: 'a'.repeat(700) },
      { name: 'b.bin', content: 'b'.repeat(100) },
    ];
    const tar = tarball(entries);
    const gz = tgz(entries);
    const zip = zipArchive([
      { name: 'dir/a.bin', content: 'a'.repeat(700), deflate: true },
      { name: 'b.bin', content: 'b'.repeat(100) },
    ]);

    const expectTruncated = async (bytes: Buffer, format: ArchiveFormat, why: string): Promise<void> => {
      const error = await effectError(extract(bytes, format));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: true });
      expect(error.message).toBe(`${what}: truncated archive: ${why}`);
    };

    it('fails retryably on a tar cut at every 512-byte boundary before its second end block', async () => {
      for (let cut = 0; cut <= tar.length - 512; cut += 512) {
        await expectTruncated(tar.subarray(0, cut), 'tar', 'the tar ended before its end-of-archive blocks');
      }
    });

    it('fails retryably on a tar cut inside a header or an entry', async () => {
      for (const cut of [1, 100, 511, 513, 1100, 2000]) {
        await expectTruncated(tar.subarray(0, cut), 'tar', 'the tar ended before its end-of-archive blocks');
      }
    });

    it('fails retryably on a tar.gz cut anywhere before the end of its gzip trailer', async () => {
      for (let cut = 2; cut < gz.length; cut += Math.max(1, Math.floor(gz.length / 16))) {
        await expectTruncated(gz.subarray(0, cut), 'tar', 'the gzip stream ended before its trailer');
      }
      await expectTruncated(gz.subarray(0, gz.length - 1), 'tar', 'the gzip stream ended before its trailer');
    });

    // Its trailer (CRC-32 and length) proves a gzip stream whole: nothing a retry fetches can differ.
    it.each([
      [
        'a 12-byte payload',
        Buffer.from('hello joblib'),
        'is whole but holds no tar: 12 bytes, fewer than one header',
      ],
      ['nothing', Buffer.alloc(0), 'is whole but holds no tar: 0 bytes, fewer than one header'],
      ['2000 bytes of no tar', Buffer.alloc(2000, 7), 'holds no tar: its first 512 bytes are no tar header'],
      [
        'a tar without its end blocks',
        tar.subarray(0, tar.length - 1024),
        'is whole but the tar in it ends without its end-of-archive blocks',
      ],
    ])('fails for good, saying what it holds, on a whole gzip stream of %s', async (_, payload, why) => {
      const error = await effectError(extract(gzipSync(payload), 'tar'));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(error.message).toBe(`${what}: invalid archive: the gzip stream ${why}`);
    });

    it('fails for good, naming it, on a plain stream whose first block is no tar header', async () => {
      const error = await effectError(extract(Buffer.alloc(2000, 7), 'tar'));
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: false });
      expect(error.message).toBe(`${what}: invalid archive: its first 512 bytes are no tar header`);
    });

    it('fails retryably on a zip cut anywhere before the end of its central directory', async () => {
      for (let cut = 0; cut < zip.length; cut += 37) {
        await expectTruncated(zip.subarray(0, cut), 'zip', 'the zip ended before its central directory');
      }
    });

    const rmTarget = async (): Promise<void> => {
      await rm(target, { recursive: true });
      await mkdir(target);
    };

    it('extracts the same archives whole, and a tar whose end blocks are followed by padding', async () => {
      await extract(Buffer.concat([tar, Buffer.alloc(8192)]), 'tar');
      await rmTarget();
      await extract(gz, 'tar');
      await rmTarget();
      await extract(zip, 'zip');
      expect(await listTree(target)).toEqual(['b.bin', 'dir/', 'dir/a.bin']);
    });

    it('fails a truncated zip file read from disk retryably too', async () => {
      const file = path.join(tmp.path, 'cut.zip');
      await writeFile(file, zip.subarray(0, zip.length - 30));
      const error = await effectError(
        extractFile(file, 'zip', target, { what, signal: never, limits: cliDownloadLimits }),
      );
      expect(error).toMatchObject({ kind: 'invalid-archive', retryable: true });
    });
  });
});
