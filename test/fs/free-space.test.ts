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

  it('reads the volume once for the checks of a moment, again once the reading is reuseMs old', async () => {
    let clock = 0;
    const readings: string[] = [];
    let free = 1000;
    const check = spaceCheck(100, {
      reuseMs: 100,
      now: () => clock,
      freeBytesOf: (dir) => (readings.push(dir), Promise.resolve(free)),
    });
    await Promise.all([check('/m', 0, what), check('/m/.staging-a', 900, what)]);
    clock = 99;
    free = 500;
    await expect(check('/m/.staging-b', 900, what)).resolves.toBeUndefined(); // the reading at 0: 1000 free
    clock = 100;
    await expect(check('/m/.staging-c', 900, what)).rejects.toThrow('500 bytes free');
    expect(readings).toEqual(['/m', '/m/.staging-c']);
  });

  it('reads the free bytes of a real file system', async () => {
    expect(await statfsFreeBytes(tmp.path)).toBeGreaterThan(0);
  });
});
