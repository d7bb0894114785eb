import { spaceCheck, statfsFreeBytes } from '../../src/fs/free-space';
import { useTempDir } from '../helpers/temp-dir';

const what = 'GET https://h/m.bin';

describe('spaceCheck', () => {
  const tmp = useTempDir('free-space');

  it('lets a size through that fits with the reserve kept free', async () => {
    await expect(
      spaceCheck(100, { freeBytesOf: () => Promise.resolve(1000) })('/m', 900, what),
    ).resolves.toBeUndefined();
  });

  it('fails one that does not fit, for good, with kind no-space and the sizes and flag in the reason', async () => {
    const check = spaceCheck(2 ** 20, {
      reserveName: '--min-free-bytes',
      freeBytesOf: () => Promise.resolve(2 ** 30),
    });
    await expect(check('/m', 2 ** 30, what)).rejects.toMatchObject({
      kind: 'no-space',
      retryable: false,
      message: `${what}: does not fit on the model volume: needs 1 GiB + 1 MiB kept free (--min-free-bytes), 1 GiB free`,
    });
  });

  it('checks the reserve alone for a size not known (0)', async () => {
    await expect(spaceCheck(10, { freeBytesOf: () => Promise.resolve(5) })('/m', 0, what)).rejects.toThrow(
      'needs 10 bytes kept free (minFreeBytes), 5 bytes free',
    );
  });

  it('lets the download go on when statfs fails', async () => {
    await expect(
      spaceCheck(10, { freeBytesOf: () => Promise.reject(new Error('ENOSYS')) })('/m', 5, what),
    ).resolves.toBeUndefined();
  });

  it('reads the free bytes of a real file system', async () => {
    expect(await statfsFreeBytes(tmp.path)).toBeGreaterThan(0);
  });
});
