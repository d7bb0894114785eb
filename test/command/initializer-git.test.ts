/**
 * The storage initializer and git repository URIs (`https://host/org/repo.git`), which KServe's initializer clones
 * (kserve_storage.py `_download_git_repo`, since 0.19) and modelsync does not serve: refused before any request,
 * never fetched as a plain GET whose answer (a forge's HTML page) would be saved as the model.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { listTree, writeFiles } from '../helpers/file-tree';
import { runInitializer } from '../helpers/initializer';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('initializer-git');

/** A forge as a plain GET sees it: `/org/repo.git` redirects to the repo's HTML page. */
let forge: Server;
let forgeUrl: string;
const requests: string[] = [];

beforeAll(async () => {
  forge = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url?.endsWith('.git') === true) {
      res.writeHead(301, { location: req.url.slice(0, -'.git'.length) }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<html>the repo page</html>');
  });
  await new Promise<void>((resolve) => forge.listen(0, '127.0.0.1', resolve));
  forgeUrl = `http://127.0.0.1:${(forge.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => forge.close(() => resolve())));

beforeEach(() => {
  requests.length = 0;
});

describe('initializerMode with a git repository URI', () => {
  it.each(['/org/repo.git', '/org/repo.git/'])(
    'exits 1 before any request for %s, naming git, dest as it was',
    async (path) => {
      const dest = join(tmp.path, 'models');
      await writeFiles(dest, { 'keep.txt': 'kept' });
      const uri = `${forgeUrl}${path}`;

      const run = await runInitializer([
        { uri: `${forgeUrl}/model.bin`, dest: join(tmp.path, 'first') },
        { uri, dest },
      ]);

      expect(run.exitCode).toBe(1);
      expect(run.errors).toEqual([
        expect.objectContaining({
          storageUri: uri,
          errorKind: 'unsupported-scheme',
          reason: expect.stringContaining('git repository') as unknown,
        }),
      ]);
      expect(requests).toEqual([]);
      expect(await listTree(dest)).toEqual(['keep.txt']);
      expect(await listTree(tmp.path)).toEqual(['models/', 'models/keep.txt']);
    },
  );

  it('still downloads a file whose name only contains .git', async () => {
    const dest = join(tmp.path, 'models');

    const run = await runInitializer([{ uri: `${forgeUrl}/org/a.github.io/model.gitx`, dest }]);

    expect(run.errors).toEqual([]);
    expect(run.exitCode).toBe(0);
    expect(await listTree(dest)).toEqual(['model.gitx']);
  });
});
