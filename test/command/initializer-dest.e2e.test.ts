/** The storage initializer's dest: filled through a staging dir inside it, replaced entries, links never followed. */
import { readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { initializerMode } from '../../src/command/initializer-mode';
import { waitFor } from '../../src/testing/wait';
import { exists, listTree, readFiles, writeFiles } from '../helpers/file-tree';
import { useHttpServers } from '../helpers/http-servers';
import { initializerConfig, runInitializer } from '../helpers/initializer';
import { atLeast, atLevel, LogSink } from '../helpers/log-sink';
import { startStorageServer, type StorageServer } from '../helpers/storage-server';
import { useTempDir } from '../helpers/temp-dir';

const stagingDirsIn = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((name) => name.startsWith('.modelsync-download-'));

describe('initializerMode', () => {
  const tmp = useTempDir('initializer-dest');
  const serve = useHttpServers();
  let storage: StorageServer;
  beforeEach(async () => {
    storage = await startStorageServer();
  });
  afterEach(() => storage.close());

  it('replaces the entries an earlier run left by name, keeps the others, and follows no link it did not make', async () => {
    const dest = join(tmp.path, 'mnt', 'models');
    await writeFiles(tmp.path, { 'outside/secret.txt': 'not yours', 'outside/d/x': 'x' });
    await writeFiles(dest, { 'keep.txt': 'kept', 'sub/old.json': 'old' });
    await symlink(join(tmp.path, 'outside', 'secret.txt'), join(dest, 'model.bin'));
    await storage.tarGz('/model.tar.gz', { 'model.bin': 'new', 'sub/config.json': '{}' });

    const run = await runInitializer([{ uri: `${storage.url}/model.tar.gz`, dest }]);

    expect(run.exitCode).toBe(0);
    // The archive is extracted and not kept; `sub/` is the archive's, whole; the link was replaced, not written through.
    expect(await listTree(dest)).toEqual(['keep.txt', 'model.bin', 'sub/', 'sub/config.json']);
    expect(await readFiles(dest)).toEqual({
      'keep.txt': 'kept',
      'model.bin': 'new',
      'sub/config.json': '{}',
    });
    expect(await readFiles(join(tmp.path, 'outside'))).toEqual({ 'secret.txt': 'not yours', 'd/x': 'x' });
  });

  it("merges the dirs of a run's pairs that share a dest, as KServe writes each straight into it: the later pair's files win", async () => {
    const dest = join(tmp.path, 'models');
    await writeFiles(dest, { '1/left-by-an-earlier-run.txt': 'stale' });
    await storage.tarGz('/weights.tar.gz', {
      '1/model.savedmodel/weights.bin': 'weights',
      'shared.txt': 'first',
    });
    await storage.tarGz('/config.tar.gz', {
      '1/labels.txt': 'labels',
      'config.pbtxt': 'cfg',
      'shared.txt': 'second',
    });

    const run = await runInitializer([
      { uri: `${storage.url}/weights.tar.gz`, dest },
      { uri: `${storage.url}/config.tar.gz`, dest },
    ]);

    expect(run.exitCode).toBe(0);
    // The run's first pair replaced the dir an earlier run left; its second pair merged into what the first wrote.
    expect(await readFiles(dest)).toEqual({
      '1/model.savedmodel/weights.bin': 'weights',
      '1/labels.txt': 'labels',
      'config.pbtxt': 'cfg',
      'shared.txt': 'second',
    });
    expect(await stagingDirsIn(dest)).toEqual([]);
  });

  it('removes the staging dirs a killed run left in dest, then downloads', async () => {
    const dest = join(tmp.path, 'models');
    await writeFiles(dest, { '.modelsync-download-AbC123/model.bin': 'half of it' });
    storage.file('/model.bin', 'whole', 'application/octet-stream');

    const run = await runInitializer([{ uri: `${storage.url}/model.bin`, dest }]);

    expect(run.exitCode).toBe(0);
    expect(await listTree(dest)).toEqual(['model.bin']);
    const removals = run.logs.filter(
      (line) => line.msg === 'removing a staging dir an earlier run left behind',
    );
    expect(removals).toEqual([expect.objectContaining({ dest, dir: '.modelsync-download-AbC123' })]);
    expect(removals.every(atLevel('warn'))).toBe(true);
  });

  it('creates a missing dest and its parents', async () => {
    const dest = join(tmp.path, 'a', 'b', 'models');
    storage.file('/model.bin', 'bytes', 'application/octet-stream');

    const run = await runInitializer([{ uri: `${storage.url}/model.bin`, dest }]);

    expect(run.exitCode).toBe(0);
    expect(await readFiles(dest)).toEqual({ 'model.bin': 'bytes' });
  });

  // docs/storage.md "Links above <dest>": the dirs above dest are the image's and the pod spec's (an image's
  // /mnt -> /data in front of a mount point), followed as KServe's initializer follows them; dest itself is not.
  it('follows a link among the dirs above dest, as KServe does, and writes only into the dir it names', async () => {
    await writeFiles(tmp.path, { 'data/other': 'o' });
    await symlink(join(tmp.path, 'data'), join(tmp.path, 'mnt'));
    storage.file('/model.bin', 'bytes', 'application/octet-stream');

    const run = await runInitializer([
      { uri: `${storage.url}/model.bin`, dest: join(tmp.path, 'mnt', 'models') },
    ]);

    expect(run.exitCode).toBe(0);
    expect(await readFiles(join(tmp.path, 'data'))).toEqual({ other: 'o', 'models/model.bin': 'bytes' });
  });

  it('refuses a dest that is a symlink, before any request, leaving its target untouched', async () => {
    await writeFiles(tmp.path, { 'target/x': 'x' });
    const dest = join(tmp.path, 'models');
    await symlink(join(tmp.path, 'target'), dest);
    storage.file('/model.bin', 'bytes', 'application/octet-stream');

    const run = await runInitializer([{ uri: `${storage.url}/model.bin`, dest }]);

    expect(run.exitCode).toBe(1);
    expect(run.errors).toEqual([
      expect.objectContaining({
        errorKind: 'refused',
        msg: expect.stringMatching(
          `^cannot download ${storage.url}/model.bin to ${dest}: refused: .*a symlink`,
        ) as unknown,
      }),
    ]);
    expect(await listTree(join(tmp.path, 'target'))).toEqual(['x']);
    expect(storage.requestsFor('/model.bin')).toBe(0);
  });

  it('refuses a dest that is a regular file, leaving it as it was', async () => {
    const dest = join(tmp.path, 'models');
    await writeFile(dest, 'a file');
    storage.file('/model.bin', 'bytes', 'application/octet-stream');

    const run = await runInitializer([{ uri: `${storage.url}/model.bin`, dest }]);

    expect(run.exitCode).toBe(1);
    expect(run.errors).toEqual([expect.objectContaining({ errorKind: 'refused' })]);
    expect(await readFile(dest, 'utf8')).toBe('a file');
  });

  it('leaves dest as it was and removes its staging dir when a download fails', async () => {
    const dest = join(tmp.path, 'models');
    await writeFiles(dest, { 'model.bin': 'old' });
    storage.file('/model.bin', 'new', 'application/octet-stream');
    storage.cut('/model.bin', 10); // every attempt cut mid-body (no validator: no resume)

    const run = await runInitializer(
      [{ uri: `${storage.url}/model.bin`, dest }],
      initializerConfig({ maxAttempts: 2 }),
    );

    expect(run.exitCode).toBe(1);
    expect(await listTree(dest)).toEqual(['model.bin']);
    expect(await readFile(join(dest, 'model.bin'), 'utf8')).toBe('old');
  });

  it('aborts the download when unsubscribed, leaving dest as it was and no staging dir', async () => {
    const dest = join(tmp.path, 'models');
    await writeFiles(dest, { 'model.bin': 'old', 'keep.txt': 'kept' });
    // Headers and the first 64 KiB of a 1 MiB body, then nothing: the download is mid-body when it is stopped.
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 2 ** 20 });
      response.write(Buffer.alloc(64 * 1024, 1));
    });
    const sink = new LogSink();
    const config = initializerConfig({ progressIntervalMs: 20 });
    const pairs = [{ uri: `${server.url}/model.bin`, dest }];
    const outputs: unknown[] = [];
    const subscription = initializerMode(pairs, config, pino({ level: 'info' }, sink), {}).subscribe(
      (output) => outputs.push(output),
    );
    try {
      await waitFor(
        async () => {
          const [staging] = await stagingDirsIn(dest);
          return staging !== undefined && (await exists(join(dest, staging, 'model.bin')))
            ? (await stat(join(dest, staging, 'model.bin'))).size > 0
            : false;
        },
        10_000,
        'the download to be under way',
      );
    } finally {
      subscription.unsubscribe();
    }

    await waitFor(
      async () => (await stagingDirsIn(dest)).length === 0,
      10_000,
      'the staging dir to be removed',
    );
    expect(await readFiles(dest)).toEqual({ 'model.bin': 'old', 'keep.txt': 'kept' });
    expect(outputs).toEqual([]);
    expect(sink.lines.filter(atLeast('error'))).toEqual([]);
  });
});
