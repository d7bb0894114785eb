/** Tests of fileCopier on real temp dirs: clones, whole and streamed copies, aborts, and no link followed. */
import { constants } from 'node:fs';
import { lstat, open, readFile, symlink, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { fileCopier, type CopyCounter, type HeldFile } from '../../src/fs';
import { injectedClone } from '../helpers/injected-clone';
import { useTempDir } from '../helpers/temp-dir';

jest.mock('node:fs/promises', () =>
  jest
    .requireActual<typeof import('../helpers/injected-clone')>('../helpers/injected-clone')
    .withInjectedClone(),
);

const tmp = useTempDir('copy-held');
/** Every clone ends as `outcome` says (`clone`, `real`, or an errno code); by default the file system has none. */
const everyClone = (outcome: string): void => {
  injectedClone.outcome = () => outcome;
};
everyClone('ENOTSUP');
const live = (): AbortSignal => new AbortController().signal;
// Past the 8 MiB up to which a file is copied by the kernel in one call: this one is streamed.
const bigBytes = 8 * 1024 * 1024 + 4096;

let handles: FileHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.map((handle) => handle.close()));
  handles = [];
  injectedClone.attempts = 0;
  everyClone('ENOTSUP');
});

/** A source file of `size` bytes held open as a caller of the copier holds it, and the new file's path. */
const held = async (size: number, signal = live()): Promise<HeldFile> => {
  const path = join(tmp.path, `source-${size}`);
  await writeFile(path, Buffer.alloc(size, 'w'));
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  handles.push(handle);
  return { handle, size, path, to: join(tmp.path, `copy-${size}`), signal, what: `copying ${path}` };
};

/** A counter that records what it is told. */
const recording = () => {
  const seen = { streamed: 0, whole: [] as number[] };
  const counter: CopyCounter = {
    count: async function* (source) {
      for await (const chunk of source) {
        seen.streamed += chunk.byteLength;
        yield chunk;
      }
    },
    counted: (bytes) => seen.whole.push(bytes),
  };
  return { seen, counter };
};

describe('fileCopier', () => {
  it.each([
    ['a small file in one kernel call', 1000],
    ['a file past 8 MiB streamed', bigBytes],
  ])('copies %s when the file system has no clones, counting its bytes', async (_, size) => {
    const { seen, counter } = recording();
    const file = await held(size);

    expect(await fileCopier({ counter })(file)).toEqual({ how: 'copied', bytes: size });

    // Buffer.equals: jest's toEqual walks 8 MiB byte by byte.
    expect((await readFile(file.to)).equals(await readFile(file.path))).toBe(true);
    expect((await lstat(file.to)).ino).not.toBe((await lstat(file.path)).ino);
    expect(seen.streamed + seen.whole.reduce((sum, bytes) => sum + bytes, 0)).toBe(size);
  });

  it('clones, without running beforeCopying, where the file system clones', async () => {
    everyClone('clone');
    const beforeCopying = jest.fn(() => Promise.resolve());
    const file = await held(bigBytes);

    expect(await fileCopier({ beforeCopying })(file)).toEqual({ how: 'cloned', bytes: bigBytes });
    expect(beforeCopying).not.toHaveBeenCalled();
  });

  it('tries the clone once, and runs beforeCopying once, for all the files of one copier', async () => {
    const beforeCopying = jest.fn(() => Promise.resolve());
    const copy = fileCopier({ beforeCopying });

    const files = await Promise.all([10, 20, 30].map((size) => held(size)));
    await Promise.all(files.map(copy));

    expect(injectedClone.attempts).toBe(1);
    expect(beforeCopying).toHaveBeenCalledTimes(1);
  });

  it('copies nothing when beforeCopying fails (no room)', async () => {
    const file = await held(1000);
    const copy = fileCopier({ beforeCopying: () => Promise.reject(new Error('does not fit')) });

    await expect(copy(file)).rejects.toThrow('does not fit');
    await expect(lstat(file.to)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('fails with a filesystem error naming the file when the clone fails for another reason', async () => {
    everyClone('EIO');
    const file = await held(1000);

    await expect(fileCopier()(file)).rejects.toMatchObject({
      kind: 'filesystem',
      retryable: true,
      message: expect.stringContaining(`copying ${file.path}: EIO`) as unknown,
    });
  });

  it('stops with the abort reason when aborted while it streams, far short of the end', async () => {
    const controller = new AbortController();
    const file = await held(bigBytes, controller.signal);
    const counter: CopyCounter = {
      count: async function* (source) {
        for await (const chunk of source) {
          controller.abort(new Error('model removed'));
          yield chunk;
        }
      },
      counted: () => undefined,
    };

    await expect(fileCopier({ counter })(file)).rejects.toThrow('model removed');
    expect((await lstat(file.to)).size).toBeLessThan(bigBytes / 2);
  });

  it.each([
    ['a clone', 'real', 1000],
    ['a kernel copy', 'ENOTSUP', 1000],
    ['a streamed copy', 'ENOTSUP', bigBytes],
  ])('never writes through a symlink planted where %s goes', async (_, how, size) => {
    everyClone(how);
    const file = await held(size);
    const victim = join(tmp.path, 'victim');
    await writeFile(victim, 'untouched');
    await symlink(victim, file.to);

    await expect(fileCopier()(file)).rejects.toMatchObject({ kind: 'filesystem' });
    expect(await readFile(victim, 'utf8')).toBe('untouched');
    expect((await lstat(file.to)).isSymbolicLink()).toBe(true);
  });
});
