/** Tests of the generic object-store downloader's archive objects, and of objectStoreStorage, over an in-memory store. */
import * as E from 'fp-ts/Either';
import { objectStoreStorage } from '../../../src/storage/object-store/download-objects';
import { effectError } from '../../helpers/effect-error';
import { listTree, readFiles } from '../../helpers/file-tree';
import { makeTarGz, makeZip } from '../../helpers/storage-server';
import { useTempDir } from '../../helpers/temp-dir';
import { MemoryStore } from './memory-store';

const staging = useTempDir('objects');

const download = (store: MemoryStore, prefix: string) => store.downloadInto(staging.path, prefix);

describe('downloadObjects', () => {
  describe('archives', () => {
    it('extracts a model that is one archive object, and leaves no scratch file', async () => {
      const tgz = await makeTarGz({ 'config.pbtxt': 'name: "m1"', '1/model.onnx': 'onnx' });
      const store = new MemoryStore().put('m1/model.tar.gz', tgz);
      await download(store, 'm1');
      expect(await readFiles(staging.path)).toEqual({ 'config.pbtxt': 'name: "m1"', '1/model.onnx': 'onnx' });
    });

    // 250 bytes take the 255 a name may have; our scratch file's prefix must not push it past them.
    it.each(['tar.gz', 'zip'])(
      'extracts a lone .%s object whose name is as long as a file name may be',
      async (ext) => {
        const files = { 'model.bin': 'm' };
        const archive = ext === 'zip' ? await makeZip(files) : await makeTarGz(files);
        const name = `${'n'.repeat(255 - ext.length - 1)}.${ext}`;
        const store = new MemoryStore().put(`m1/${name}`, archive);
        await download(store, `m1/${name}`);
        expect(await listTree(staging.path)).toEqual(['model.bin']);
      },
    );

    it('extracts a zip named exactly by the prefix, resuming its cut download', async () => {
      const zip = await makeZip({ 'model.bin': 'z'.repeat(5000) });
      const store = new MemoryStore().put('zips/m1.zip', zip);
      store.cut('zips/m1.zip', 100);
      await download(store, 'zips/m1.zip');
      expect(await readFiles(staging.path)).toEqual({ 'model.bin': 'z'.repeat(5000) });
      expect(store.reads.map((read) => read.offset)).toEqual([0, 100]);
    });

    it('refuses an archive object whose entry would escape', async () => {
      const store = new MemoryStore().put('m1.tar', await evilTar());
      const error = await effectError(download(store, 'm1.tar'));
      expect(error).toMatchObject({ kind: 'refused' });
      expect(await listTree(staging.path)).toEqual([]);
    });

    it('keeps archives among other objects as files', async () => {
      const zip = await makeZip({ 'inner.txt': 'x' });
      const store = new MemoryStore().put('m1/extra.zip', zip).put('m1/model.bin', 'm');
      await download(store, 'm1');
      expect(await listTree(staging.path)).toEqual(['extra.zip', 'model.bin']);
    });
  });
});

/** A tar whose one entry is `../escaped`, built by hand (the tar package will not write one). */
const evilTar = async (): Promise<Buffer> => {
  const header = Buffer.alloc(512);
  header.write('../escaped', 0);
  header.write('0000644\0', 100);
  header.write('0000000\0', 108);
  header.write('0000000\0', 116);
  header.write('00000000004\0', 124);
  header.write('00000000000\0', 136);
  header.write('        ', 148);
  header.write('0', 156);
  header.write('ustar\0', 257);
  header.write('00', 263);
  const sum = header.reduce((total, byte) => total + byte, 0);
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const body = Buffer.alloc(512);
  body.write('evil');
  return Promise.resolve(Buffer.concat([header, body, Buffer.alloc(1024)]));
};

describe('objectStoreStorage', () => {
  it('downloads what `resolve` locates, and fails an unresolvable URI for good as `invalid-uri`', async () => {
    const store = new MemoryStore().put('m1/a', 'a');
    const provider = objectStoreStorage({
      schemes: ['mem'],
      resolve: (uri) =>
        uri.startsWith('mem://models/')
          ? E.right({ client: store.client, location: store.at(uri.slice('mem://models/'.length)) })
          : E.left(`not a bucket URI: ${uri}`),
    });
    expect(provider.schemes).toEqual(['mem']);
    await provider.download('mem://models/m1', staging.path, new AbortController().signal);
    expect(await readFiles(staging.path)).toEqual({ a: 'a' });
    const error = await effectError(provider.download('mem:/x', staging.path, new AbortController().signal));
    expect(error).toMatchObject({
      kind: 'invalid-uri',
      retryable: false,
      message: 'not a bucket URI: mem:/x',
    });
  });
});
