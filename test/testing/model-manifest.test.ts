/** The V2 stand-in's manifest check: a load counts as complete only on exactly the files of the version its marker names. */
import { rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { manifestOf, type ModelManifest } from '../../src/testing/model-manifest';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { writeFiles } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

const v1 = 'http://storage/v1/m1.tar.gz';
const files = { 'config.json': '{}', 'weights/part-0.bin': 'abc' };
const marker = (version: string): Record<string, string> => ({
  'SUCCESS.1': JSON.stringify({ storageUri: version, framework: 'sklearn', memory: '1Mi' }),
});
const manifests = new Map<string, ModelManifest>([[v1, manifestOf(new Map(Object.entries(files)))]]);

describe('startV2ModelServer with a manifest', () => {
  const tmp = useTempDir('manifest');
  let server: V2ModelServerStandIn;
  const load = async (name: string): Promise<number> =>
    (await fetch(`${server.url}/v2/repository/models/${name}/load`, { method: 'POST' })).status;

  beforeEach(async () => {
    server = await startV2ModelServer({ modelDir: tmp.path, manifest: (version) => manifests.get(version) });
  });
  afterEach(() => server.close());

  it('loads a model dir holding exactly the files of the version its marker names, and records the version', async () => {
    await writeFiles(join(tmp.path, 'm1'), { ...files, ...marker(v1) });
    expect(await load('m1')).toBe(200);
    expect(server.loads).toEqual([{ name: 'm1', complete: true, status: 200, version: v1 }]);
  });

  it.each<[string, Record<string, string>, string]>([
    ['a file is missing', { 'config.json': '{}', ...marker(v1) }, 'missing [weights/part-0.bin]'],
    ['a file is extra', { ...files, 'evil.pkl': 'x', ...marker(v1) }, 'extra [evil.pkl]'],
    [
      'a file differs',
      { ...files, 'weights/part-0.bin': 'abd', ...marker(v1) },
      'differing [weights/part-0.bin]',
    ],
    ['the marker names an unknown version', { ...files, ...marker('http://storage/v9') }, 'no manifest for'],
    ['there is no marker', files, '0 markers'],
    ['there are two markers', { ...files, ...marker(v1), 'SUCCESS.2': '{}' }, '2 markers'],
  ])('refuses and records the problem when %s', async (_, content, problem) => {
    await writeFiles(join(tmp.path, 'm1'), content);
    expect(await load('m1')).toBe(400);
    expect(server.loads).toEqual([
      expect.objectContaining({
        name: 'm1',
        complete: false,
        status: 400,
        problem: expect.stringContaining(problem) as unknown,
      }),
    ]);
  });

  it('refuses a model dir that is a symlink to a complete copy, and a link inside it', async () => {
    await writeFiles(join(tmp.path, 'copy'), { ...files, ...marker(v1) });
    await symlink(join(tmp.path, 'copy'), join(tmp.path, 'm1'));
    expect(await load('m1')).toBe(400);
    await writeFiles(join(tmp.path, 'm2'), { ...files, ...marker(v1) });
    await rename(join(tmp.path, 'm2', 'config.json'), join(tmp.path, 'config.json'));
    await symlink(join(tmp.path, 'config.json'), join(tmp.path, 'm2', 'config.json'));
    expect(await load('m2')).toBe(400);
    expect(server.loads.map((l) => l.problem)).toEqual([
      'the model dir is not a directory',
      'config.json is not a regular file',
    ]);
  });
});

describe('startV2ModelServer without a manifest', () => {
  const tmp = useTempDir('manifest');
  it('refuses a model dir that is a symlink, even to a dir with a marker', async () => {
    const server = await startV2ModelServer({ modelDir: tmp.path });
    try {
      await writeFiles(join(tmp.path, 'copy'), marker(v1));
      await symlink(join(tmp.path, 'copy'), join(tmp.path, 'm1'));
      await writeFile(join(tmp.path, 'm2'), 'a file');
      const load = (name: string) =>
        fetch(`${server.url}/v2/repository/models/${name}/load`, { method: 'POST' });
      expect((await load('m1')).status).toBe(400);
      expect((await load('m2')).status).toBe(400);
      expect(server.loads).toEqual([
        { name: 'm1', complete: false, status: 400 },
        { name: 'm2', complete: false, status: 400 },
      ]);
    } finally {
      await server.close();
    }
  });
});
