/**
 * Hostile archive sizes and cuts — bombs, entry counts, archives cut at every boundary — over local storage and
 * HTTP through the production store: caps fail for good, cuts retryably; nothing partial is left either way.
 */
import { randomBytes } from 'node:crypto';
import type { EffectErrorKind } from '../../../src/core/errors';
import { tarball, tgz, tgzBomb, zipArchive, zipBomb, type TarEntry } from '../../storage/archive/builders';
import { useArchiveBench, type Provider } from './archive-bench';

const MiB = 2 ** 20;
const providers: ReadonlyArray<Provider> = ['local', 'http'];

const entries: TarEntry[] = [
  { name: 'model/', type: '5' },
  { name: 'model/weights.bin', content: 'w'.repeat(1500) },
  { name: 'model/config.json', content: '{}' },
  { name: 'model/latest', type: '2', linkname: 'weights.bin' },
];
const tar = tarball(entries);
const gz = tgz(entries);
const zip = zipArchive([
  { name: 'model/weights.bin', content: 'w'.repeat(1500), deflate: true },
  { name: 'model/config.json', content: '{}' },
]);

describe('hostile archive sizes and cuts', () => {
  // Small caps, so that each case stays small and quick; the defaults are the flags' (docs/operating.md).
  const bench = useArchiveBench({ maxModelBytes: 100 * MiB, maxArchiveEntries: 50 });

  const expectFailure = async (
    provider: Provider,
    file: string,
    bytes: Buffer,
    kind: EffectErrorKind,
    retryable: boolean,
  ): Promise<string> => {
    const error = await bench.install(await bench.place(provider, file, bytes));
    expect(error).toMatchObject({ kind, retryable });
    expect(await bench.leftovers()).toEqual(['models/', 'outside/']);
    return error!.message;
  };

  describe.each(providers)('over %s', (provider) => {
    describe('bombs', () => {
      // 64 MiB of zeros in ~64 KiB (gzip's best is ~1032:1): expanded past the ratio cap once past 16 MiB.
      let tgz64: Buffer;
      let zip64: Buffer;
      let zip8x: Buffer;
      beforeAll(async () => {
        [tgz64, zip64, zip8x] = await Promise.all([
          tgzBomb(64 * MiB),
          zipBomb(64 * MiB),
          zipBomb(16 * MiB, 8),
        ]);
      });

      it.each([
        ['a tar.gz bomb', 'bomb.tgz', () => tgz64],
        ['a zip bomb', 'bomb.zip', () => zip64],
      ])('refuses %s for good, naming --max-archive-ratio', async (_label, file, bytes) => {
        expect(await expectFailure(provider, file, bytes(), 'too-large', false)).toContain(
          '(--max-archive-ratio)',
        );
      });

      it('refuses a zip of eight 16 MiB bombs, each within the grace, together past the ratio', async () => {
        const message = await expectFailure(provider, 'many.zip', zip8x, 'too-large', false);
        expect(message).toContain('(--max-archive-ratio)');
      });
    });

    describe('entry counts', () => {
      const many = (count: number): TarEntry[] =>
        Array.from({ length: count }, (_, i) => ({ name: `f${i}`, content: 'x' }));

      it.each([
        ['a tar', 'many.tar', tarball(many(51))],
        ['a tar.gz', 'many.tgz', tgz(many(51))],
        ['a zip', 'many.zip', zipArchive(many(51).map(({ name }) => ({ name, content: 'x' })))],
      ])('refuses %s of more entries than --max-archive-entries for good', async (_label, file, bytes) => {
        expect(await expectFailure(provider, file, bytes, 'too-large', false)).toContain(
          '(--max-archive-entries)',
        );
      });

      it('installs an archive of exactly the cap', async () => {
        expect(await bench.install(await bench.place(provider, 'fifty.tgz', tgz(many(50))))).toBeUndefined();
        await bench.clear();
      });
    });

    describe('cuts', () => {
      it('fails retryably on a tar cut at every 512-byte boundary short of its second end block', async () => {
        for (let cut = 0; cut <= tar.length - 512; cut += 512) {
          await expectFailure(provider, `cut-${cut}.tar`, tar.subarray(0, cut), 'invalid-archive', true);
        }
      });

      it('fails retryably on a tar.gz cut mid-stream or before the end of its trailer', async () => {
        for (const cut of [10, Math.floor(gz.length / 2), gz.length - 8, gz.length - 1]) {
          await expectFailure(provider, `cut-${cut}.tgz`, gz.subarray(0, cut), 'invalid-archive', true);
        }
      });

      it('fails retryably on a zip without its central directory', async () => {
        for (const cut of [0, 30, Math.floor(zip.length / 2), zip.length - 22, zip.length - 1]) {
          await expectFailure(provider, `cut-${cut}.zip`, zip.subarray(0, cut), 'invalid-archive', true);
        }
      });

      it.each([
        ['tar', 'whole.tar', tar],
        ['tar.gz', 'whole.tgz', gz],
        ['zip', 'whole.zip', zip],
      ])('installs the whole %s (the control)', async (_label, file, bytes) => {
        expect(await bench.install(await bench.place(provider, file, bytes))).toBeUndefined();
        await bench.clear();
      });
    });
  });

  describe('the model cap', () => {
    // A local file copied, as the cap counts what lands in the model dir; a linked one lands no byte (its test:
    // local-storage.test.ts, "links").
    const small = useArchiveBench({ maxModelBytes: 64 * 1024, localModelFiles: 'copy' });
    // Random bytes do not compress: only --max-model-bytes stops these.
    const noise = (): string => randomBytes(30 * 1024).toString('latin1');
    const three = (): TarEntry[] => ['a', 'b', 'c'].map((name) => ({ name, content: noise() }));

    it.each(
      providers.flatMap(
        (provider) =>
          [
            [provider, 'a tar', 'big.tar', tarball(three())],
            [provider, 'a tar.gz', 'big.tgz', tgz(three())],
            [
              provider,
              'a zip',
              'big.zip',
              zipArchive(
                three().map(({ name, content }) => ({ name, content: Buffer.from(content!, 'latin1') })),
              ),
            ],
            [provider, 'a file', 'big.bin', randomBytes(90 * 1024)],
          ] as const,
      ),
    )(
      'over %s: refuses %s whose content passes --max-model-bytes for good, leaving nothing',
      async (provider, _label, file, bytes) => {
        const error = await small.install(await small.place(provider, file, bytes));
        expect(error).toMatchObject({ kind: 'too-large', retryable: false });
        expect(error?.message).toContain('(--max-model-bytes)');
        expect(await small.leftovers()).toEqual(['models/', 'outside/']);
      },
    );
  });
});
