/** The storage initializer's last step: the new entries renamed into dest, all of them or none. */
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import * as E from 'fp-ts/Either';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { initializerStorage } from '../../src/wiring/initializer-storage';
import { listTree, readFiles, writeFiles } from '../helpers/file-tree';
import { LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';

/** The renames to fail once: an entry whose content is a key, moved anywhere, after the value's renames of it pass. */
const failing = { contents: new Map<string, number>() };

jest.mock('node:fs/promises', () => {
  const actual = jest.requireActual<typeof fsPromises>('node:fs/promises');
  const { readFileSync } = jest.requireActual<typeof import('node:fs')>('node:fs');
  const rename: typeof actual.rename = async (from, to) => {
    const content = ((): string | undefined => {
      try {
        return readFileSync(from, 'utf8');
      } catch {
        return undefined;
      }
    })();
    const passes = content === undefined ? undefined : failing.contents.get(content);
    if (passes !== undefined && passes > 0) failing.contents.set(content!, passes - 1);
    else if (passes !== undefined && failing.contents.delete(content!))
      throw Object.assign(new Error(`EIO: i/o error, rename '${String(from)}'`), { code: 'EIO' });
    return actual.rename(from, to);
  };
  return { ...actual, rename };
});

describe('initializerStorage moving the new entries into dest', () => {
  const tmp = useTempDir('initializer-move');

  // The renames ran one entry at a time, each deleting the old entry first: a rename failing part-way left dest
  // with some new entries, one old entry gone and the rest old, and the message said only that the move failed.
  it('puts the old entries back when a rename fails part-way, leaving nothing of ours behind', async () => {
    const source = join(tmp.path, 'source');
    const dest = join(tmp.path, 'dest');
    await writeFiles(source, { 'a.bin': 'new a', 'b.bin': 'new b', 'c.bin': 'new c', 'd/x': 'new x' });
    await writeFiles(dest, {
      'a.bin': 'old a',
      'b.bin': 'old b',
      'c.bin': 'old c',
      'd/x': 'old x',
      keep: 'k',
    });
    const storage = initializerStorage(
      { ...defaultAppConfig, localStorageRoots: [tmp.path], localModelFiles: 'copy' },
      pino(new LogSink()),
      {},
    );
    if (E.isLeft(storage)) throw new Error(storage.left);
    failing.contents.set('new b', 0);

    await expect(storage.right.download(source, dest, new AbortController().signal)).rejects.toThrow(
      `cannot move`,
    );

    expect(await readFiles(dest)).toEqual({
      'a.bin': 'old a',
      'b.bin': 'old b',
      'c.bin': 'old c',
      'd/x': 'old x',
      keep: 'k',
    });
    expect(await listTree(dest)).toEqual(['a.bin', 'b.bin', 'c.bin', 'd/', 'd/x', 'keep']);
    await storage.right.close();
  });

  it('names what dest is left with when putting it back fails too', async () => {
    const source = join(tmp.path, 'source');
    const dest = join(tmp.path, 'dest');
    await writeFiles(source, { 'a.bin': 'new a', 'b.bin': 'new b' });
    await writeFiles(dest, { 'a.bin': 'old a', 'b.bin': 'old b' });
    const storage = initializerStorage(
      { ...defaultAppConfig, localStorageRoots: [tmp.path], localModelFiles: 'copy' },
      pino(new LogSink()),
      {},
    );
    if (E.isLeft(storage)) throw new Error(storage.left);
    // The new b fails to move in; the old b, moved aside, fails to move back.
    failing.contents.set('new b', 0).set('old b', 1);

    await expect(storage.right.download(source, dest, new AbortController().signal)).rejects.toThrow(
      `putting dest back failed too, ${dest} holds the new nothing and lacks the old b.bin`,
    );
    await storage.right.close();
  });
});
