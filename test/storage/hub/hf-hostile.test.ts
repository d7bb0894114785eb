/** hfStorage against a hostile Hub: answers the API never sends are refused with a clear error, before any file is fetched. */
import { defaultDownloadLimits } from '../../../src/storage/download-limits';
import { hfStorage } from '../../../src/storage/hub/hf-storage';
import { startHttpServer, type RunningHttpServer } from '../../../src/testing/http-server';
import { effectError } from '../../helpers/effect-error';
import { listTree } from '../../helpers/file-tree';
import { useTempDir } from '../../helpers/temp-dir';

const staging = useTempDir('hf-hostile');
const never = new AbortController().signal;
const sha = 'a'.repeat(40);

/** What the hostile Hub answers: the revision's body, and the tree's body and headers (given its own URL). */
interface Answers {
  revision: () => string;
  tree: (base: string) => { body: string; headers?: Record<string, string> };
}
let answers: Answers;
let resolves: number;
let server: RunningHttpServer;
beforeAll(async () => {
  server = await startHttpServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    const json = { 'content-type': 'application/json' };
    if (path.startsWith('/api/models/org/evil/revision/'))
      return void response.writeHead(200, json).end(answers.revision());
    if (path.startsWith('/api/models/org/evil/tree/')) {
      const { body, headers = {} } = answers.tree(server.url);
      return void response.writeHead(200, { ...json, ...headers }).end(body);
    }
    resolves++;
    response.writeHead(200, { 'content-length': 1 }).end('x');
  });
});
afterAll(() => server.close());
beforeEach(() => {
  resolves = 0;
  answers = { revision: () => JSON.stringify({ sha }), tree: () => ({ body: '[]' }) };
});

const treeOf =
  (...entries: unknown[]) =>
  () => ({ body: JSON.stringify(entries) });
const file = (path: unknown, size: unknown = 1) => ({ type: 'file', oid: 'b'.repeat(40), size, path });
const download = () =>
  effectError(hfStorage({ endpoint: server.url }).download('hf://org/evil', staging.path, never));

describe('hfStorage against a hostile Hub', () => {
  it.each([
    ['../x', '../x', "its path contains '..'"],
    ['a/../../x', 'a/../../x', "its path contains '..'"],
    ['/etc/passwd', '/etc/passwd', 'its path is absolute'],
    ['..\\x', '..\\x', "its path contains '..'"],
    ['a NUL', 'a\0b', 'its name contains NUL'],
    ['a 256-byte name', 'n'.repeat(256), 'longer than 255 bytes'],
  ])('refuses the tree entry %s before fetching anything', async (_, path, why) => {
    answers.tree = treeOf(file('ok.txt'), file(path));
    const error = await download();
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain(why);
    expect(resolves).toBe(0);
    expect(await listTree(staging.path)).toEqual([]);
  });

  it('refuses a path of a million characters in a short message (it was quoted whole at each attempt)', async () => {
    answers.tree = treeOf(file(`dir/${'n'.repeat(1_000_000)}`));
    const error = await download();
    expect(error).toMatchObject({ kind: 'refused', retryable: false });
    expect(error.message).toContain('longer than 4096 bytes');
    expect(error.message).toContain('(1000004 characters)');
    expect(error.message.length).toBeLessThan(500);
  });

  it('refuses two files for one path and a file where another needs a directory', async () => {
    answers.tree = treeOf(file('a/b'), file('a//b'));
    expect((await download()).message).toContain('needs the same path, a/b');
    answers.tree = treeOf(file('a'), file('a/b'));
    expect((await download()).message).toContain('which is the file "a"');
    expect(resolves).toBe(0);
  });

  it.each([[-1], ['12'], [1e20], [1.5], [null]])(
    'refuses a size of %j as an answer the API never sends',
    async (size) => {
      answers.tree = treeOf(file('w.bin', size));
      const error = await download();
      expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
      expect(error.message).toContain('has no size in bytes');
      expect(resolves).toBe(0);
    },
  );

  it('fails an absurd but whole size against --max-model-bytes before fetching', async () => {
    answers.tree = treeOf(file('w.bin', 2 ** 52));
    expect(await download()).toMatchObject({ kind: 'too-large', retryable: false });
    expect(resolves).toBe(0);
  });

  it('refuses entries without a path or of another type, and a page that is no array', async () => {
    answers.tree = treeOf({ type: 'file', size: 1 });
    expect((await download()).message).toContain('tree entry 0 has no path');
    answers.tree = treeOf({ type: 'symlink', path: 'x', size: 1 });
    expect((await download()).message).toContain('is no file or directory');
    answers.tree = () => ({ body: '[{"type":"file","size":1,"path":"a\\ud800b"}]' });
    expect((await download()).message).toContain('a path that is no valid text');
    answers.tree = () => ({ body: '{"files":[]}' });
    expect((await download()).message).toContain('a tree page is no JSON array');
  });

  it('refuses a JSON answer larger than its cap without holding it, and one nested too deep', async () => {
    answers.tree = () => ({ body: `[${'"x",'.repeat(4 * 2 ** 20)}"x"]` });
    expect(await download()).toMatchObject({ kind: 'too-large' });
    answers.tree = () => ({ body: `${'['.repeat(100_000)}${']'.repeat(100_000)}` });
    expect(await download()).toMatchObject({ kind: 'invalid-response' });
    expect(resolves).toBe(0);
  });

  it('refuses a revision answer without a 40-hex commit', async () => {
    for (const body of ['{}', '{"sha":"main"}', '{"sha":"../../etc"}', '[]']) {
      answers.revision = () => body;
      const error = await download();
      expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
      expect(error.message).toContain('no 40-hex commit sha');
    }
  });

  it('refuses a next page off the endpoint, and paging in a circle', async () => {
    answers.tree = () => ({
      body: JSON.stringify([file('a')]),
      headers: { link: '<https://elsewhere.example/p2>; rel="next"' },
    });
    expect((await download()).message).toContain('a next page is off the endpoint');
    answers.tree = (base) => ({
      body: JSON.stringify([file('a')]),
      headers: { link: `<${base}/api/models/org/evil/tree/${sha}?recursive=true&expand=false>; rel="next"` },
    });
    expect((await download()).message).toContain('goes in a circle');
  });

  it("refuses a next page too long to be the Hub's, and keeps no next page it was given, only its digest", async () => {
    let pages = 0;
    answers.tree = (base) => {
      pages++;
      const cursor = pages < 50 ? `${pages}-${'c'.repeat(8000)}` : 'x'.repeat(9000);
      return {
        body: JSON.stringify([{ type: 'directory', path: `d${pages}`, size: 0 }]),
        headers: { link: `<${base}/api/models/org/evil/tree/${sha}?cursor=${cursor}>; rel="next"` },
      };
    };
    const error = await download();
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: false });
    expect(error.message).toMatch(/page 50 gave a next page of \d+ characters/);
    expect(pages).toBe(50);
  });

  it('refuses a tree listing more entries than the file cap allows, before fetching', async () => {
    answers.tree = () => ({
      body: JSON.stringify(
        Array.from({ length: 30 }, (_, i) => ({ type: 'directory', path: `d${i}`, size: 0 })),
      ),
    });
    const limits = { ...defaultDownloadLimits, maxModelFiles: 10 };
    const error = await effectError(
      hfStorage({ endpoint: server.url, limits }).download('hf://org/evil', staging.path, never),
    );
    expect(error).toMatchObject({ kind: 'too-large', retryable: false });
  });
});
