/** Tests of loadJournal against real temp dirs: entries survive a restart, confirmations clear them. */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { specToJson, type Snapshot } from '../../src/core/snapshot';
import { loadJournal } from '../../src/edge/load-journal';
import { modelDirStore } from '../../src/edge/model-dir';
import type { LoadJournal, ModelStore } from '../../src/ports';
import { writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { useTempDir } from '../helpers/temp-dir';

const specA = spec('s3://models/model1', '100Mi');
const jsonA = '{"storageUri":"s3://models/model1","framework":"sklearn","memory":"100Mi"}';

const tmp = useTempDir('load-journal');
let root: string;
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

beforeEach(async () => {
  root = join(tmp.path, 'models');
  await mkdir(root);
  journal = loadJournal({ root });
});

describe('loadJournal', () => {
  it('remembers a started load until it is confirmed, across a new store on the same dir', async () => {
    await mkdir(join(root, 'm1'), { recursive: true });
    await mkdir(join(root, 'm2'), { recursive: true });
    await journal.starting(name('m1'));
    await journal.starting(name('m2'));
    expect([...(await loadJournal({ root }).unconfirmed())].sort()).toEqual(['m1', 'm2']);
    await journal.confirmed(name('m1'));
    expect([...(await loadJournal({ root }).unconfirmed())]).toEqual(['m2']);
  });

  it('leaves only model dirs behind once every load is confirmed', async () => {
    await newStore().install(name('m1'), specA, writeModel({ 'model.pt': 'a' }), live());
    await journal.starting(name('m1'));
    expect(await entries()).toEqual(['.modelsync-loads', 'm1']);
    await journal.confirmed(name('m1'));
    expect(await entries()).toEqual(['m1']);
    expect(await journal.unconfirmed()).toEqual(new Set());
  });

  it('keeps the journal through recovery', async () => {
    await newStore().install(name('m1'), specA, writeModel({ 'model.pt': 'a' }), live());
    await journal.starting(name('m1'));
    const recovered = await newStore().recover();
    expect(asJson(recovered)).toEqual({ m1: JSON.parse(jsonA) as unknown });
    expect([...(await loadJournal({ root }).unconfirmed())]).toEqual(['m1']);
  });

  it('records concurrent loads without losing one to the journal dir being removed', async () => {
    const names = Array.from({ length: 20 }, (_, i) => name(`m${i}`));
    await Promise.all(names.map((model) => mkdir(join(root, model), { recursive: true })));
    await Promise.all(
      names.map(async (model, i) => {
        await journal.starting(model);
        if (i % 2 === 0) await journal.confirmed(model);
      }),
    );
    expect([...(await journal.unconfirmed())].sort()).toEqual(names.filter((_, i) => i % 2 === 1).sort());
  });
});

describe('loadJournal after a crash mid-remove', () => {
  it('drops a journal entry whose model dir is gone', async () => {
    await journal.starting(name('gone'));
    expect([...(await loadJournal({ root }).unconfirmed())]).toEqual([]);
    expect(await entries()).toEqual([]);
  });
});

describe('loadJournal under concurrent loads', () => {
  it('records loads of two models at once while the journal dir comes and goes', async () => {
    const cycle = async (model: string): Promise<void> => {
      for (let i = 0; i < 200; i++) {
        await journal.starting(name(model));
        await journal.confirmed(name(model));
      }
    };
    await expect(Promise.all([cycle('a'), cycle('b')])).resolves.toEqual([undefined, undefined]);
    expect(await entries()).toEqual([]);
  });

  it.each(['..', '../outside', 'a/b', '.hidden'])(
    'refuses the entry for the name %j, writing nothing',
    async (bad) => {
      await expect(journal.starting(name(bad))).rejects.toMatchObject({ kind: 'refused', retryable: false });
      await expect(journal.confirmed(name(bad))).rejects.toMatchObject({ kind: 'refused', retryable: false });
      expect(await readdir(tmp.path)).toEqual(['models']);
      expect(await entries()).toEqual([]);
    },
  );

  it('fails with a permanent filesystem error when the model dir is a file', async () => {
    await writeFile(join(tmp.path, 'file'), '');
    const blocked = loadJournal({ root: join(tmp.path, 'file') });
    await expect(blocked.starting(name('m1'))).rejects.toMatchObject({
      kind: 'filesystem',
      retryable: false,
    });
  });
});
