/** checkNameInFiles: a model whose own files name it otherwise is refused before its load; any doubt lets it go. */
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelName } from '../../src/core/model-name';
import {
  checkNameInFiles,
  mlserverNameFile,
  tritonNameFile,
  type NameFile,
} from '../../src/model-server/name-in-files';
import { effectError } from '../helpers/effect-error';
import { writeFiles } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';

const modelDir = useTempDir('name-in-files');
const mm = 'mm' as ModelName;

const files: Array<[string, NameFile, (name: string) => string]> = [
  ['Triton', tritonNameFile, (name) => `backend: "python"\nname: ${JSON.stringify(name)}\n`],
  ['MLServer', mlserverNameFile, (name) => JSON.stringify({ name, implementation: 'x.Y' })],
];

describe.each(files)('checkNameInFiles for %s', (_server, nameFile, naming) => {
  it('refuses for good a model its files name otherwise, naming both names', async () => {
    await writeFiles(join(modelDir.path, 'mm'), { [nameFile.file]: naming('iris-v1') });
    const error = await effectError(checkNameInFiles(modelDir.path, mm, nameFile));
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('the config names the model "mm" but its');
    expect(error.message).toContain(`${nameFile.file} names it "iris-v1"`);
    expect(error.message).toContain('the two names must match');
  });

  it('quotes a hostile name with its control characters escaped, and cut', async () => {
    await writeFiles(join(modelDir.path, 'mm'), {
      [nameFile.file]: naming(`x\n{"level":50}${'y'.repeat(500)}`),
    });
    const error = await effectError(checkNameInFiles(modelDir.path, mm, nameFile));
    expect(error.message).toContain(String.raw`"x\n{\"level\":50}yyy`);
    expect(error.message).not.toContain('y'.repeat(201));
  });

  it.each<[string, string]>([
    ['the same name', 'mm'],
    ['an empty name (the server takes the dir name)', ''],
  ])('lets the load go ahead with %s', async (_case, given) => {
    await writeFiles(join(modelDir.path, 'mm'), { [nameFile.file]: naming(given) });
    await expect(checkNameInFiles(modelDir.path, mm, nameFile)).resolves.toBeUndefined();
  });

  it('lets the load go ahead without the file, or without the model dir', async () => {
    await mkdir(join(modelDir.path, 'mm'));
    await expect(checkNameInFiles(modelDir.path, mm, nameFile)).resolves.toBeUndefined();
    await expect(checkNameInFiles(modelDir.path, 'absent' as ModelName, nameFile)).resolves.toBeUndefined();
  });

  it('reads through no link: neither a linked file nor a linked model dir', async () => {
    await writeFiles(join(modelDir.path, 'elsewhere'), { [nameFile.file]: naming('iris-v1') });
    await mkdir(join(modelDir.path, 'mm'));
    await symlink(join(modelDir.path, 'elsewhere', nameFile.file), join(modelDir.path, 'mm', nameFile.file));
    await symlink(join(modelDir.path, 'elsewhere'), join(modelDir.path, 'linked'));
    await expect(checkNameInFiles(modelDir.path, mm, nameFile)).resolves.toBeUndefined();
    await expect(checkNameInFiles(modelDir.path, 'linked' as ModelName, nameFile)).resolves.toBeUndefined();
  });

  it('leaves a file past 1 MiB to the server', async () => {
    await mkdir(join(modelDir.path, 'mm'));
    await writeFile(join(modelDir.path, 'mm', nameFile.file), naming('iris-v1') + ' '.repeat(1024 * 1024));
    await expect(checkNameInFiles(modelDir.path, mm, nameFile)).resolves.toBeUndefined();
  });
});

describe('mlserverNameFile', () => {
  it.each<[string, string]>([
    ['a name that is no string', '{"name": 5}'],
    ['a name in a nested object only', '{"parameters": {"name": "iris"}}'],
    ['JSON with a duplicate key', '{"name": "a", "name": "b"}'],
    ['text that is no JSON', '{"name": "iris"'],
    ['JSON that is no object', '["iris"]'],
  ])('gives no name for %s', (_case, text) => {
    expect(mlserverNameFile.nameIn(text)).toBeUndefined();
  });

  it('reads the name at the top, whatever else the settings hold', () => {
    expect(
      mlserverNameFile.nameIn('{"implementation": "m.M", "parameters": {"version": "v1"}, "name": "iris"}'),
    ).toBe('iris');
  });
});
