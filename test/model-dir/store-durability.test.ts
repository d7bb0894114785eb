/** Tests of the model store's crash-safety without awaited fsyncs: the marker's manifest, checked at start-up recovery. */
import { mkdir, readdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { specToJson } from '../../src/core/snapshot';
import { modelDirStore } from '../../src/model-dir/store';
import { countingHandles } from '../helpers/held-handles';
import { writeFiles } from '../helpers/file-tree';
import { name, spec } from '../helpers/fixtures';
import { atLevel } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { install } from '../helpers/install';

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly [field: string]: unknown;
}

const tmp = useTempDir('model-dir-durability');
const specA = spec('s3://models/model1', '100Mi');
const files = { 'model.pt': 'weights of the model', 'v1/config.json': '{"a":1}' };

let lines: LogLine[];
beforeEach(() => {
  lines = [];
});

const newStore = () =>
  modelDirStore({
    root: tmp.path,
    log: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) }),
  });

const installA = async (): Promise<void> => {
  const installed = await install(
    newStore(),
    name('model1'),
    specA,
    (dir) => writeFiles(dir, files),
    new AbortController().signal,
  );
  // The flush in the background has ended once the replaced version may be dropped.
  await installed.dropReplaced();
};

const mismatchWarnings = (): LogLine[] =>
  lines.filter((line) => line.msg.startsWith('model files do not match their marker'));

describe('modelDirStore: files checked against the marker at start-up', () => {
  it('recovers a model whose files are all there with their sizes', async () => {
    await installA();
    const recovered = await newStore().recover();
    expect([...recovered.keys()]).toEqual(['model1']);
    expect(mismatchWarnings()).toEqual([]);
  });

  it.each([
    [
      'cut short (a power loss before the flush)',
      (dir: string) => truncate(join(dir, 'v1', 'config.json'), 2),
    ],
    ['emptied', (dir: string) => truncate(join(dir, 'model.pt'), 0)],
    ['missing', (dir: string) => rm(join(dir, 'model.pt'))],
  ])('deletes a model dir with a file %s, so the model is downloaded again', async (_, damage) => {
    await installA();
    await damage(join(tmp.path, 'model1'));
    const recovered = await newStore().recover();
    expect(recovered.size).toBe(0);
    expect(await readdir(tmp.path)).toEqual([]);
    expect(mismatchWarnings()).toEqual([expect.objectContaining({ model: 'model1' })]);
    expect(mismatchWarnings().every(atLevel('warn'))).toBe(true);
  });

  it('keeps a model dir the model server added files to', async () => {
    await installA();
    await writeFile(join(tmp.path, 'model1', 'compiled.cache'), 'cache');
    expect([...(await newStore().recover()).keys()]).toEqual(['model1']);
  });

  it('checks only the files the marker lists, holding a few dirs open however deep a neighbour nested its own', async () => {
    // The model server may nest dirs at will in its model dir: one descriptor a level ran into EMFILE at start-up.
    // Installed twice: the second install's dropReplaced waits for the flush in the background (the first's does not).
    await installA();
    await installA();
    let path = join(tmp.path, 'model1', 'planted');
    for (let level = 0; level < 200; level++) path = join(path, 'd');
    await writeFiles(path, { 'file.bin': 'x' });
    const { result: recovered, mostHeld } = await countingHandles(() => newStore().recover());
    expect([...recovered.keys()]).toEqual(['model1']);
    expect(mismatchWarnings()).toEqual([]);
    expect(mostHeld).toBeLessThanOrEqual(4);
  });

  it('deletes a model dir whose listed file sits behind a link, which it never follows', async () => {
    await installA();
    const dir = join(tmp.path, 'model1');
    const copy = join(tmp.path, '.copy');
    await mkdir(copy);
    await writeFile(join(copy, 'config.json'), files['v1/config.json']);
    await rm(join(dir, 'v1'), { recursive: true });
    await symlink(copy, join(dir, 'v1'));
    expect((await newStore().recover()).size).toBe(0);
    expect(mismatchWarnings()).toEqual([
      expect.objectContaining({ model: 'model1', mismatch: 'v1/config.json is missing' }),
    ]);
    expect(await readFile(join(copy, 'config.json'), 'utf8')).toBe(files['v1/config.json']);
  });

  it('recovers a marker without a manifest (KServe, modelsync before 0.3) as before: nothing to check', async () => {
    await installA();
    const dir = join(tmp.path, 'model1');
    const marker = (await readdir(dir)).find((entry) => entry.startsWith('SUCCESS.'))!;
    await writeFile(join(dir, marker), JSON.stringify(specToJson(specA)));
    await truncate(join(dir, 'model.pt'), 1);
    expect([...(await newStore().recover()).keys()]).toEqual(['model1']);
  });

  it('treats a manifest naming a path outside the dir as a corrupt marker', async () => {
    await installA();
    const dir = join(tmp.path, 'model1');
    const marker = (await readdir(dir)).find((entry) => entry.startsWith('SUCCESS.'))!;
    const content = JSON.parse(await readFile(join(dir, marker), 'utf8')) as Record<string, unknown>;
    await writeFile(
      join(dir, marker),
      JSON.stringify({ ...content, modelsyncFiles: { '../../etc/passwd': 1 } }),
    );
    expect((await newStore().recover()).size).toBe(0);
    expect(lines.some((line) => line.msg === 'corrupt model marker; deleting the model dir')).toBe(true);
  });
});
