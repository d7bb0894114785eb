/** Tests of pvcStorage on real temp dirs: pvc://<claim>/<path> read from under the claim's mount root. */
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pvcStorage } from '../../../src/storage/local/local-storage';
import { effectError } from '../../helpers/effect-error';
import { listTree, writeFiles } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';
import { tarball } from '../archive/builders';

const signal = new AbortController().signal;

describe('pvcStorage', () => {
  const tmp = useTempDir('pvc');
  let root: string;
  let target: string;

  beforeEach(async () => {
    const run = Math.random().toString(36).slice(2);
    root = path.join(tmp.path, `claim-${run}`);
    target = path.join(tmp.path, `target-${run}`);
    await writeFiles(root, { 'models/m1/config.json': '{}', 'models/m1/1/model.onnx': 'onnx' });
    await mkdir(target);
  });

  it('serves the pvc scheme', () => {
    expect(pvcStorage({ root: '/mnt/pvc' }).schemes).toEqual(['pvc']);
  });

  it('copies <root>/<path> for pvc://<claim>/<path>, the claim name not being part of the path', async () => {
    await pvcStorage({ root }).download('pvc://my-claim/models/m1', target, signal);
    expect(await listTree(target)).toEqual(['1/', '1/model.onnx', 'config.json']);
  });

  it('extracts the one archive a pvc://<claim>/<path> dir holds, as KServe does', async () => {
    await mkdir(path.join(root, 'models', 'm2'));
    await writeFile(
      path.join(root, 'models', 'm2', 'model.tar'),
      tarball([{ name: '1/model.onnx', content: 'onnx' }]),
    );
    await pvcStorage({ root }).download('pvc://my-claim/models/m2', target, signal);
    expect(await listTree(target)).toEqual(['1/', '1/model.onnx']);
  });

  it('copies the whole claim for pvc://<claim>, and applies the patterns', async () => {
    await pvcStorage({ root }).download('pvc://my-claim', target, signal, undefined, {
      select: { allowPatterns: ['*.json'] },
    });
    expect(await listTree(target)).toEqual(['models/', 'models/m1/', 'models/m1/config.json']);
  });

  it('reads under its root whatever --local-storage-roots says, and refuses a link that leaves it', async () => {
    const outside = path.join(tmp.path, `outside-${Math.random().toString(36).slice(2)}`);
    await writeFiles(outside, { 'secret.json': 'x' });
    await symlink(outside, path.join(root, 'models', 'escape'));
    const error = await effectError(
      pvcStorage({ root, rootName: '--pvc-mount-root' }).download('pvc://c/models/escape', target, signal),
    );
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('--pvc-mount-root');
  });

  it.each([
    ['pvc:///models/m1', 'names no claim'],
    ['pvc://c/models/../../etc', "must not contain '..'"],
    ['pvc://Bad_Claim/m1', 'not a Kubernetes name'],
  ])('refuses %s as an invalid URI', async (uri, why) => {
    const error = await effectError(pvcStorage({ root }).download(uri, target, signal));
    expect(error).toMatchObject({
      kind: 'invalid-uri',
      retryable: false,
      message: expect.stringContaining(why) as string,
    });
  });

  it('fails for good, naming the flag, when nothing is mounted at its root', async () => {
    const error = await effectError(
      pvcStorage({ root: path.join(tmp.path, 'nothing-here'), rootName: '--pvc-mount-root' }).download(
        'pvc://c/models/m1',
        target,
        signal,
      ),
    );
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('no claim is mounted at');
    expect(error.message).toContain('--pvc-mount-root');
  });

  it('says a missing path on the claim is not found', async () => {
    const error = await effectError(pvcStorage({ root }).download('pvc://c/models/m2', target, signal));
    expect(error).toMatchObject({
      kind: 'not-found',
      message: expect.stringContaining(path.join(root, 'models', 'm2')) as string,
    });
  });
});
