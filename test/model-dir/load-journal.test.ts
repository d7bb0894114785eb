/** Tests of loadJournal against real temp dirs: records survive a restart, and nothing planted at its path is followed. */
import {
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import fsPromises from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { specToJson, type Snapshot } from '../../src/core/snapshot';
import { loadJournal } from '../../src/model-dir/load-journal';
import { modelDirStore } from '../../src/model-dir/store';
import type { LoadJournal, ModelStore } from '../../src/ports';
import { makeFifo, makeSentinel, type Sentinel } from '../hardening/neighbour/sentinel';
import { writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { atLevel, LogSink } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { waitFor } from '../../src/testing/wait';
import { install } from '../helpers/install';

const specA = spec('s3://models/model1', '100Mi');
const jsonA = '{"storageUri":"s3://models/model1","framework":"sklearn","memory":"100Mi"}';

const tmp = useTempDir('load-journal');
let root: string;
let journalPath: string;
let sink: LogSink;

/** A journal on `root` logging into `sink`. */
const newJournal = (dir = root): LoadJournal =>
  loadJournal({ root: dir, log: pino({ level: 'debug' }, sink) });
let journal: LoadJournal;

const newStore = (): ModelStore => modelDirStore({ root, log: pino({ level: 'silent' }) });
const live = (): AbortSignal => new AbortController().signal;
const entries = async (): Promise<string[]> => (await readdir(root)).sort();
const asJson = (snapshot: Snapshot): Record<string, unknown> =>
  Object.fromEntries([...snapshot].map(([model, modelSpec]) => [model, specToJson(modelSpec)]));
/** A fill that writes `files` into the staging dir it is given. */
const writeModel =
  (files: Readonly<Record<string, string>>) =>
  (dir: string): Promise<void> =>
    writeFiles(dir, files);
/** What a fresh journal on the same dir finds unconfirmed, sorted. */
const unconfirmedOnRestart = async (): Promise<string[]> => [...(await newJournal().unconfirmed())].sort();
const modelDirs = (...names: string[]): Promise<unknown> =>
  Promise.all(names.map((model) => mkdir(join(root, model), { recursive: true })));
const warnings = (): Array<[string, unknown]> =>
  sink.lines.filter(atLevel('warn')).map((line) => [line.msg, line['found']]);
const record = (event: string, model: string): string => `${JSON.stringify([event, model])}\n`;

beforeEach(async () => {
  root = join(tmp.path, 'models');
  journalPath = join(root, '.modelsync-journal');
  await mkdir(root);
  sink = new LogSink();
  journal = newJournal();
});

describe('loadJournal', () => {
  it('remembers a started load until it is confirmed, across a new journal on the same dir', async () => {
    await modelDirs('m1', 'm2');
    await journal.starting(name('m1'));
    await journal.starting(name('m2'));
    expect(await unconfirmedOnRestart()).toEqual(['m1', 'm2']);
    await journal.confirmed(name('m1'));
    expect(await unconfirmedOnRestart()).toEqual(['m2']);
  });

  it('keeps one journal file beside the models, readable by modelsync alone', async () => {
    await install(newStore(), name('m1'), specA, writeModel({ 'model.pt': 'a' }), live());
    await journal.starting(name('m1'));
    await journal.confirmed(name('m1'));
    expect(await entries()).toEqual(['.modelsync-journal', 'm1']);
    expect((await stat(journalPath)).mode & 0o777).toBe(0o600);
    expect(await readFile(journalPath, 'utf8')).toBe(record('starting', 'm1') + record('confirmed', 'm1'));
    expect(await journal.unconfirmed()).toEqual(new Set());
  });

  it('writes nothing for the confirmation of a load it never saw start', async () => {
    await journal.confirmed(name('m1'));
    await journal.unconfirmed();
    expect(await readFile(journalPath, 'utf8')).toBe('');
  });

  it('writes records asked for together in the order asked, leaving out a confirmation with no load pending', async () => {
    await modelDirs('m1', 'm2', 'm3');
    await journal.starting(name('m1')); // the write under way when the others are asked for
    await Promise.all([
      journal.starting(name('m2')),
      journal.confirmed(name('m1')),
      journal.confirmed(name('m3')),
      journal.starting(name('m3')),
    ]);
    expect(await readFile(journalPath, 'utf8')).toBe(
      record('starting', 'm1') +
        record('starting', 'm2') +
        record('confirmed', 'm1') +
        record('starting', 'm3'),
    );
    expect(await unconfirmedOnRestart()).toEqual(['m2', 'm3']);
  });

  it('fails every record of a batch whose write fails', async () => {
    await writeFile(join(tmp.path, 'file'), '');
    const blocked = newJournal(join(tmp.path, 'file'));
    const batch = await Promise.allSettled([blocked.starting(name('m1')), blocked.starting(name('m2'))]);
    expect(batch.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    for (const result of batch)
      expect((result as PromiseRejectedResult).reason).toMatchObject({ kind: 'filesystem' });
  });

  it('gives up a record whose write hangs (a hung model dir mount) at its deadline, retryably, and drops the records waiting behind it', async () => {
    await modelDirs('m1', 'm2', 'm3', 'm4');
    const lstat = fsPromises.lstat as (...args: unknown[]) => Promise<unknown>;
    let release = (): void => undefined;
    const hung = new Promise<void>((resolve) => (release = resolve));
    // The journal's check of its path hangs, as every call on a hung NFS mount does; the rest of the fs works.
    const spy = jest.spyOn(fsPromises, 'lstat').mockImplementation((async (
      path: string,
      ...rest: unknown[]
    ) => {
      if (path === journalPath) await hung;
      return lstat(path, ...rest);
    }) as never);
    try {
      const bounded = loadJournal({ root, log: pino({ level: 'silent' }), writeTimeoutMs: 100 });
      await bounded.unconfirmed(); // read at start-up, before the mount hangs
      const given = await Promise.allSettled([bounded.starting(name('m1')), bounded.starting(name('m2'))]);
      const later = await Promise.allSettled([bounded.starting(name('m3'))]);
      for (const result of [...given, ...later]) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toMatchObject({ kind: 'timeout', retryable: true });
        expect(String((result as PromiseRejectedResult).reason)).toContain('the load journal');
      }
      release();
      await bounded.starting(name('m4'));
      // The write under way when it hung (m1 and m2, asked together) goes out once the mount answers; m3, which gave
      // up waiting behind it, does not.
      expect(await unconfirmedOnRestart()).toEqual(['m1', 'm2', 'm4']);
    } finally {
      release();
      spy.mockRestore();
    }
  });

  it('keeps the journal through recovery', async () => {
    await install(newStore(), name('m1'), specA, writeModel({ 'model.pt': 'a' }), live());
    await journal.starting(name('m1'));
    const recovered = await newStore().recover();
    expect(asJson(recovered)).toEqual({ m1: JSON.parse(jsonA) as unknown });
    expect(await unconfirmedOnRestart()).toEqual(['m1']);
  });

  it('records concurrent loads in call order', async () => {
    const names = Array.from({ length: 20 }, (_, i) => name(`m${i}`));
    await modelDirs(...names);
    await Promise.all(
      names.map(async (model, i) => {
        await journal.starting(model);
        if (i % 2 === 0) await journal.confirmed(model);
      }),
    );
    const odd = names.filter((_, i) => i % 2 === 1).sort();
    expect([...(await journal.unconfirmed())].sort()).toEqual(odd);
    expect(await unconfirmedOnRestart()).toEqual(odd);
  });

  it('records loads of two models cycling at once', async () => {
    const cycle = async (model: string): Promise<void> => {
      for (let i = 0; i < 100; i++) {
        await journal.starting(name(model));
        await journal.confirmed(name(model));
      }
    };
    await modelDirs('a', 'b');
    await expect(Promise.all([cycle('a'), cycle('b')])).resolves.toEqual([undefined, undefined]);
    expect(await unconfirmedOnRestart()).toEqual([]);
  });

  it('forgets a started load whose model dir is gone (a crash mid-remove), on the next start', async () => {
    await journal.starting(name('gone'));
    expect(await unconfirmedOnRestart()).toEqual([]);
    expect(await unconfirmedOnRestart()).toEqual([]);
  });

  it.each(['..', '../outside', 'a/b', '.hidden', ''])(
    'refuses the record for the name %j, writing nothing',
    async (bad) => {
      await expect(journal.starting(name(bad))).rejects.toMatchObject({ kind: 'refused', retryable: false });
      await expect(journal.confirmed(name(bad))).rejects.toMatchObject({ kind: 'refused', retryable: false });
      expect(await readdir(tmp.path)).toEqual(['models']);
      expect(await entries()).toEqual([]);
    },
  );

  it('round-trips model names with quotes, spaces and non-ASCII', async () => {
    const odd = ['quote"d', 'new\nline', 'é 模型', 'back`tick'];
    await modelDirs(...odd);
    for (const model of odd) await journal.starting(name(model));
    expect(await unconfirmedOnRestart()).toEqual([...odd].sort());
  });

  it('fails with a permanent filesystem error when the model dir is a file', async () => {
    await writeFile(join(tmp.path, 'file'), '');
    const blocked = newJournal(join(tmp.path, 'file'));
    await expect(blocked.unconfirmed()).resolves.toEqual(new Set());
    await expect(blocked.starting(name('m1'))).rejects.toMatchObject({
      kind: 'filesystem',
      retryable: false,
    });
  });

  it('holds the file open through a burst, closes it once idle, and opens it again for the next one', async () => {
    const fdsOnJournal = async (): Promise<number> => {
      const fds = await readdir('/proc/self/fd');
      const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
      return targets.filter((target) => target === journalPath).length;
    };
    const idleCloseMs = 200;
    journal = loadJournal({ root, log: pino({ level: 'debug' }, sink), idleCloseMs });
    await modelDirs('m1', 'm2');
    await journal.starting(name('m1'));
    await journal.confirmed(name('m1'));
    expect(await fdsOnJournal()).toBe(1);
    await waitFor(async () => (await fdsOnJournal()) === 0, 5000, 'the idle journal to be closed');
    await journal.starting(name('m2'));
    expect(await fdsOnJournal()).toBe(1);
    await waitFor(async () => (await fdsOnJournal()) === 0, 5000, 'the idle journal to be closed');
    expect(await unconfirmedOnRestart()).toEqual(['m2']);
    expect(warnings()).toEqual([]);
  });
});

/** Fails the create of the compacted journal (`<path>.new`) with ENOSPC, as a full disk would; restore it after. */
const noRoomToCompact = (): jest.SpyInstance => {
  const open = fsPromises.open as (...args: unknown[]) => unknown;
  return jest
    .spyOn(fsPromises, 'open')
    .mockImplementation(((path: string, ...rest: unknown[]) =>
      path.endsWith('.new')
        ? Promise.reject(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }))
        : open(path, ...rest)) as never);
};

/** Lets the create of the compacted journal succeed, then fails its write half-way with ENOSPC, as a full disk would. */
const fullWhileCompacting = (): jest.SpyInstance => {
  const open = fsPromises.open as (...args: unknown[]) => Promise<fsPromises.FileHandle>;
  return jest.spyOn(fsPromises, 'open').mockImplementation((async (path: string, ...rest: unknown[]) => {
    const handle = await open(path, ...rest);
    if (!path.endsWith('.new')) return handle;
    handle.writeFile = async (data: string | Uint8Array) => {
      await handle.write(Buffer.from(data).subarray(0, 1024));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    return handle;
  }) as never);
};

/** Counts the compacted journals made (opens of `.modelsync-journal.new`); past `allowed`, each fails for want of room. */
const countCompactions = (
  allowed: number,
): { readonly count: () => number; readonly spy: jest.SpyInstance } => {
  const open = fsPromises.open as (...args: unknown[]) => unknown;
  let count = 0;
  const spy = jest.spyOn(fsPromises, 'open').mockImplementation(((path: string, ...rest: unknown[]) => {
    if (!path.endsWith('.new')) return open(path, ...rest);
    count++;
    return count > allowed
      ? Promise.reject(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }))
      : open(path, ...rest);
  }) as never);
  return { count: () => count, spy };
};

/** `count` model names of 240 characters: 4,500 of them make pending loads past the 1 MiB compaction bound. */
const longNames = (count: number, tag: string): string[] =>
  Array.from({ length: count }, (_, i) => `${tag}-${String(i).padStart(6, '0')}`.padEnd(240, 'x'));

describe('loadJournal reading what a crash or a neighbour left', () => {
  it('skips a torn last line, and starts the next record on a line of its own', async () => {
    await modelDirs('m1', 'm2');
    await writeFile(journalPath, record('starting', 'm1') + '["starting","m');
    const restarted = newJournal();
    expect([...(await restarted.unconfirmed())]).toEqual(['m1']);
    await restarted.starting(name('m2'));
    expect(await unconfirmedOnRestart()).toEqual(['m1', 'm2']);
    expect(warnings()).toEqual([]);
  });

  it('starts the next record on a line of its own after a torn last line it could not compact away', async () => {
    await modelDirs('m1', 'm2');
    await writeFile(journalPath, record('starting', 'm1') + '["starting","m');
    const restarted = newJournal();
    const full = noRoomToCompact();
    try {
      expect([...(await restarted.unconfirmed())]).toEqual(['m1']);
      await restarted.starting(name('m2'));
    } finally {
      full.mockRestore();
    }
    expect(await unconfirmedOnRestart()).toEqual(['m1', 'm2']);
  });

  it('skips lines that are no record with one warn, and replays the records around them', async () => {
    await modelDirs('m1', 'm2', 'm3');
    const lines = [
      record('starting', 'm1'),
      'garbage\n',
      '["starting","../escape"]\n',
      '["loaded","m3"]\n',
      record('starting', 'm2'),
      '{"starting":"m3"}\n',
      record('confirmed', 'm1'),
    ];
    await writeFile(journalPath, lines.join(''));
    expect(await unconfirmedOnRestart()).toEqual(['m2']);
    expect(sink.lines.filter(atLevel('warn'))).toEqual([
      expect.objectContaining({ msg: 'skipping load journal lines that are no record', badLines: 4 }),
    ]);
  });

  // A neighbour's journal (or one grown past its bound) of thousands of unconfirmed loads: each dropped record was
  // one append, and each append past 1 MiB rewrote (and flushed) every pending load: the start never got ready.
  it('drops the unconfirmed loads of a journal past 1 MiB whose dirs are gone in one write, not one rewrite each', async () => {
    const names = longNames(4500, 'gone');
    await writeFile(journalPath, names.map((model) => record('starting', model)).join(''));
    const compactions = countCompactions(5);
    try {
      expect(await newJournal().unconfirmed()).toEqual(new Set());
      expect(compactions.count()).toBeLessThanOrEqual(2);
    } finally {
      compactions.spy.mockRestore();
    }
    expect(await unconfirmedOnRestart()).toEqual([]);
  });

  it('does not rewrite a journal whose pending loads alone pass 1 MiB at every record', async () => {
    const names = longNames(4500, 'kept');
    await modelDirs(...names);
    await writeFile(journalPath, names.map((model) => record('starting', model)).join(''));
    const reopened = newJournal();
    expect((await reopened.unconfirmed()).size).toBe(4500);
    const compactions = countCompactions(5);
    try {
      for (let i = 0; i < 50; i++) {
        await reopened.starting(name('other'));
        await reopened.confirmed(name('other'));
      }
      expect(compactions.count()).toBeLessThanOrEqual(1);
    } finally {
      compactions.spy.mockRestore();
    }
    expect((await unconfirmedOnRestart()).length).toBe(4500);
  });

  it('ignores a journal too large to be its own, and writes a fresh one', async () => {
    await modelDirs('m1');
    await writeFile(journalPath, record('starting', 'm1'));
    await truncate(journalPath, 17 * 1024 * 1024);
    expect(await unconfirmedOnRestart()).toEqual([]);
    expect(warnings()).toEqual([
      ['the load journal is too large to be ours; ignoring its records', undefined],
    ]);
    expect((await stat(journalPath)).size).toBe(0);
  });

  it('compacts a long journal at start-up to the loads still unconfirmed', async () => {
    await modelDirs('m1', 'm2');
    const cycles = record('starting', 'm1') + record('confirmed', 'm1');
    await writeFile(
      journalPath,
      cycles.repeat(Math.ceil((1024 * 1024) / cycles.length) + 1) + record('starting', 'm2'),
    );
    expect(await unconfirmedOnRestart()).toEqual(['m2']);
    expect(await readFile(journalPath, 'utf8')).toBe(record('starting', 'm2'));
    expect(await entries()).toEqual(['.modelsync-journal', 'm1', 'm2']);
  });

  it('does not rewrite the whole journal at every record while its unconfirmed loads alone are past the bound', async () => {
    // 4,500 long names unconfirmed (a server slower to load than the downloads come, or refusing them): their
    // records alone are past the 1 MiB bound, so compacting cannot bring the file under it.
    const long = (i: number): string => `${String(i).padStart(5, '0')}${'x'.repeat(245)}`;
    const waiting = Array.from({ length: 4500 }, (_, i) => long(i));
    await modelDirs(...waiting, 'm1');
    await writeFile(journalPath, waiting.map((model) => record('starting', model)).join(''));
    expect((await stat(journalPath)).size).toBeGreaterThan(1024 * 1024);
    expect((await journal.unconfirmed()).size).toBe(4500);
    // Each compaction writes the whole journal to `<path>.new`, flushes it and renames it into place.
    const open = jest.spyOn(fsPromises, 'open');
    let rewrites: number;
    try {
      for (let i = 0; i < 100; i++) {
        await journal.starting(name('m1'));
        await journal.confirmed(name('m1'));
      }
      rewrites = open.mock.calls.filter(([path]) => path === `${journalPath}.new`).length;
    } finally {
      open.mockRestore();
    }
    // Each rewrite is the whole journal, flushed: at every record, 8,000 loads took 74 s of journal writes.
    expect(rewrites).toBeLessThanOrEqual(1);
    expect(await unconfirmedOnRestart()).toHaveLength(4500);
  });

  /**
   * With the journal just under its compaction bound, m2 and m3 start while `full` fails the compaction their records
   * bring on: both records are kept, one warn says the journal is appended to as it is.
   */
  const startingPastTheBoundWhile = async (full: () => { mockRestore: () => void }): Promise<void> => {
    await modelDirs('m1', 'm2', 'm3');
    const cycles = record('starting', 'm1') + record('confirmed', 'm1');
    await writeFile(journalPath, cycles.repeat(Math.floor((1024 * 1024) / cycles.length)));
    const filling = full();
    try {
      await expect(journal.starting(name('m2'))).resolves.toBeUndefined();
      await expect(journal.starting(name('m3'))).resolves.toBeUndefined();
    } finally {
      filling.mockRestore();
    }
    expect(sink.lines.filter(atLevel('warn')).map((line) => line.msg)).toContain(
      'cannot compact the load journal; appending to it as it is',
    );
    expect(await entries()).toEqual(['.modelsync-journal', 'm1', 'm2', 'm3']);
  };

  it('keeps a record it wrote when the compaction after it fails (a full disk), and compacts at a later record', async () => {
    await startingPastTheBoundWhile(noRoomToCompact);
    await journal.confirmed(name('m3')); // past the bound still: compacted now that it can be
    expect(await readFile(journalPath, 'utf8')).toBe(record('starting', 'm2'));
    expect(await unconfirmedOnRestart()).toEqual(['m2']);
  });

  it('leaves no half-written compacted journal taking space on a full disk when its write fails', async () => {
    await startingPastTheBoundWhile(fullWhileCompacting);
    expect(await unconfirmedOnRestart()).toEqual(['m2', 'm3']);
  });

  it('reads the journal again after a transient failure of its read at start-up, and compacts none of its records away', async () => {
    await modelDirs('m1', 'm2', 'm3');
    const cycles = record('starting', 'm1') + record('confirmed', 'm1');
    await writeFile(
      journalPath,
      cycles.repeat(Math.floor((1024 * 1024) / cycles.length)) + record('starting', 'm2'),
    );
    // Every open of the journal fails EMFILE (too many open files) until the fault ends.
    const open = fsPromises.open as (...args: unknown[]) => unknown;
    const spy = jest
      .spyOn(fsPromises, 'open')
      .mockImplementation(((path: string, ...rest: unknown[]) =>
        path === journalPath
          ? Promise.reject(Object.assign(new Error('EMFILE: too many open files, open'), { code: 'EMFILE' }))
          : open(path, ...rest)) as never);
    try {
      await expect(journal.unconfirmed()).rejects.toMatchObject({ kind: 'filesystem', retryable: true });
      await expect(journal.starting(name('m3'))).rejects.toMatchObject({
        kind: 'filesystem',
        retryable: true,
      });
    } finally {
      spy.mockRestore();
    }
    expect(await journal.unconfirmed()).toEqual(new Set(['m2']));
    await journal.starting(name('m3')); // past the bound: compacted to the loads still unconfirmed
    expect(await readFile(journalPath, 'utf8')).toBe(record('starting', 'm2') + record('starting', 'm3'));
    expect(await unconfirmedOnRestart()).toEqual(['m2', 'm3']);
  });

  it('reads the journal read-only on a full disk that cannot create it for writing, not waiting for space', async () => {
    await modelDirs('m2');
    await writeFile(journalPath, record('starting', 'm2'));
    // The open for writing (it may create the file) fails ENOSPC; the read-only one works.
    const open = fsPromises.open as (...args: unknown[]) => unknown;
    const spy = jest
      .spyOn(fsPromises, 'open')
      .mockImplementation(((path: string, flags: unknown, ...rest: unknown[]) =>
        path === journalPath && typeof flags === 'number' && (flags & fsConstants.O_CREAT) !== 0
          ? Promise.reject(
              Object.assign(new Error('ENOSPC: no space left on device, open'), { code: 'ENOSPC' }),
            )
          : open(path, flags, ...rest)) as never);
    try {
      expect(await journal.unconfirmed()).toEqual(new Set(['m2']));
    } finally {
      spy.mockRestore();
    }
  });

  it('moves the loads of the 0.1 journal dir into the journal file and removes the dir', async () => {
    await modelDirs('m1', 'm2');
    await writeFiles(join(root, '.modelsync-loads'), { m1: '', 'gone-model': '', '.junk': '' });
    expect([...(await journal.unconfirmed())]).toEqual(['m1']);
    expect(await entries()).toEqual(['.modelsync-journal', 'm1', 'm2']);
    expect(await unconfirmedOnRestart()).toEqual(['m1']);
  });
});

describe('loadJournal against a neighbour planting things at its path', () => {
  let outside: Sentinel;
  beforeEach(async () => {
    outside = await makeSentinel(join(tmp.path, 'outside'));
    await modelDirs('victim', 'm2');
  });

  it('never truncates or deletes a file through a journal path planted as a symlink to a dir outside', async () => {
    await symlink(outside.dir, join(root, '.modelsync-loads'));
    await symlink(outside.dir, journalPath);
    const planted = newJournal();
    await planted.starting(name('victim'));
    await planted.confirmed(name('victim'));
    await outside.expectUntouched();
    expect((await lstat(journalPath)).isFile()).toBe(true);
    expect(await entries()).toEqual(['.modelsync-journal', 'm2', 'victim']);
    expect(warnings()).toEqual([
      ['not the load journal dir modelsync wrote; removing it', 'a symlink'],
      ['the load journal is not a file modelsync wrote; replacing it', 'a symlink'],
    ]);
  });

  it.each<[string, (path: string) => Promise<unknown>, string]>([
    ['a symlink to a file outside', (path) => symlink(join(outside.dir, 'victim'), path), 'a symlink'],
    ['a dangling symlink', (path) => symlink(join(outside.dir, 'nothing'), path), 'a symlink'],
    ['a dir', (path) => writeFiles(path, { x: 'y' }), 'a directory'],
    ['a FIFO', makeFifo, 'a FIFO'],
    ['a hard link to a file outside', (path) => link(join(outside.dir, 'victim'), path), 'other hard links'],
  ])('replaces a journal path that is %s, without writing through it', async (_, plant, found) => {
    await plant(journalPath);
    const planted = newJournal();
    await planted.starting(name('victim'));
    await planted.confirmed(name('victim'));
    await planted.starting(name('m2'));
    await outside.expectUntouched();
    expect((await lstat(journalPath)).isFile()).toBe(true);
    expect((await lstat(journalPath)).nlink).toBe(1);
    expect(await unconfirmedOnRestart()).toEqual(['m2']);
    expect(JSON.stringify(warnings())).toContain(found);
  });

  it.each<[string, (path: string) => Promise<unknown>, string]>([
    ['a symlink to a file outside', (path) => symlink(join(outside.dir, 'victim'), path), 'a symlink'],
    ['nothing (deleted)', () => Promise.resolve(), 'nothing'],
    ['another file', (path) => writeFile(path, record('starting', 'planted')), 'another file'],
  ])('writes the journal anew when it is replaced by %s between two records', async (_, plant, found) => {
    await journal.starting(name('victim'));
    await rename(journalPath, join(root, 'stolen'));
    await plant(journalPath);
    await journal.starting(name('m2'));
    await outside.expectUntouched();
    expect(await unconfirmedOnRestart()).toEqual(['m2', 'victim']);
    expect(warnings()).toEqual([
      ['the load journal was replaced or removed by someone else; writing it anew', found],
    ]);
  });

  it('writes the journal anew when it is replaced in the middle of a burst of records', async () => {
    const burst = [journal.starting(name('victim')), journal.starting(name('m2'))];
    await rename(journalPath, join(root, 'stolen')).catch(() => undefined);
    await symlink(join(outside.dir, 'victim'), journalPath).catch(() => undefined);
    await Promise.all(burst);
    await journal.confirmed(name('m2'));
    await outside.expectUntouched();
    expect(await unconfirmedOnRestart()).toEqual(['victim']);
  });

  it('never follows a link planted where it compacts into', async () => {
    await writeFile(journalPath, record('starting', 'victim').repeat(60_000));
    await symlink(join(outside.dir, 'victim'), `${journalPath}.new`);
    expect(await unconfirmedOnRestart()).toEqual(['victim']);
    await outside.expectUntouched();
    expect(await entries()).toEqual(['.modelsync-journal', 'm2', 'victim']);
  });
});
