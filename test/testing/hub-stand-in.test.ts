/** startHubStandIn: the Hub's answers as huggingface_hub reads them — revision, tree pages, resolve and its CDN redirect, errors. */
import { request } from 'undici';
import { startHubStandIn, type HubStandIn } from '../../src/testing/hub-stand-in';

let hub: HubStandIn;
let sha: string;
beforeAll(async () => {
  hub = await startHubStandIn({ pageSize: 2 });
  sha = hub.commit('org/m', { 'config.json': '{"a":1}', 'w/model.bin': 'weights!', 'w/x.txt': 'x' });
});
afterAll(() => hub.close());

const get = async (url: string, headers: Record<string, string> = {}) => {
  const response = await request(url, { headers });
  return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
};

describe('startHubStandIn', () => {
  it('resolves a branch to its commit with the model info and siblings, sizes with ?blobs=true', async () => {
    const plain = await get(`${hub.url}/api/models/org/m/revision/main`);
    expect(JSON.parse(plain.text)).toMatchObject({
      id: 'org/m',
      sha,
      private: false,
      gated: false,
      siblings: [{ rfilename: 'config.json' }, { rfilename: 'w/model.bin' }, { rfilename: 'w/x.txt' }],
    });
    const blobs = JSON.parse((await get(`${hub.url}/api/models/org/m/revision/${sha}?blobs=true`)).text) as {
      siblings: unknown[];
    };
    expect(blobs.siblings[1]).toMatchObject({ rfilename: 'w/model.bin', size: 8, lfs: { size: 8 } });
  });

  it('answers an unknown revision 404 RevisionNotFound', async () => {
    const answer = await get(`${hub.url}/api/models/org/m/revision/nope`);
    expect(answer.status).toBe(404);
    expect(answer.headers['x-error-code']).toBe('RevisionNotFound');
  });

  it('pages the recursive tree with Link rel="next" until the last page', async () => {
    const pages: unknown[][] = [];
    let next: string | undefined = `${hub.url}/api/models/org/m/tree/${sha}?recursive=true&expand=false`;
    while (next !== undefined) {
      const answer = await get(next);
      pages.push(JSON.parse(answer.text) as unknown[]);
      next = /<([^>]+)>; rel="next"/.exec(String(answer.headers['link'] ?? ''))?.[1];
    }
    expect(pages.map((page) => page.length)).toEqual([2, 2]);
    expect(pages.flat()).toEqual([
      { type: 'file', oid: expect.stringMatching(/^[0-9a-f]{40}$/) as string, size: 7, path: 'config.json' },
      { type: 'directory', oid: expect.any(String) as string, size: 0, path: 'w' },
      {
        type: 'file',
        oid: expect.any(String) as string,
        size: 8,
        lfs: { oid: expect.stringMatching(/^[0-9a-f]{64}$/) as string, size: 8, pointerSize: 134 },
        path: 'w/model.bin',
      },
      { type: 'file', oid: expect.any(String) as string, size: 1, path: 'w/x.txt' },
    ]);
  });

  it('answers a small file at once with its ETag and X-Repo-Commit, ranges too', async () => {
    const whole = await get(`${hub.url}/org/m/resolve/main/config.json`);
    expect(whole).toMatchObject({ status: 200, text: '{"a":1}' });
    expect(whole.headers['x-repo-commit']).toBe(sha);
    expect(whole.headers['etag']).toMatch(/^"[0-9a-f]{40}"$/);
    expect(await get(`${hub.url}/org/m/resolve/main/config.json`, { range: 'bytes=1-' })).toMatchObject({
      status: 206,
      text: '"a":1}',
    });
  });

  it('redirects an LFS file to the CDN with X-Linked-Etag and X-Linked-Size; the CDN serves ranges of a signed URL only', async () => {
    const redirect = await get(`${hub.url}/org/m/resolve/${sha}/w/model.bin`);
    expect(redirect.status).toBe(302);
    expect(redirect.headers).toMatchObject({ 'x-linked-size': '8', 'x-repo-commit': sha });
    const location = String(redirect.headers['location']);
    expect(location.startsWith(`${hub.cdnUrl}/repos/`)).toBe(true);
    expect(redirect.headers['x-linked-etag']).toBe(`"${/([0-9a-f]{64})\?/.exec(location)![1]}"`);
    expect(await get(location, { range: 'bytes=4-' })).toMatchObject({ status: 206, text: 'hts!' });
    expect((await get(location.replace(/X-Amz-Signature=[^&]+/, 'X-Amz-Signature=forged'))).status).toBe(403);
  });

  it('answers a missing file 404 EntryNotFound and a missing repo 401 RepoNotFound without a token', async () => {
    const file = await get(`${hub.url}/org/m/resolve/main/nope.bin`);
    expect([file.status, file.headers['x-error-code']]).toEqual([404, 'EntryNotFound']);
    const repo = await get(`${hub.url}/api/models/org/none/revision/main`);
    expect([repo.status, repo.headers['x-error-code']]).toEqual([401, 'RepoNotFound']);
  });

  it('makes a repo a commit created private when createRepo comes after it, as when it comes first', async () => {
    hub.commit('org/made-by-commit', { 'a.txt': 'a' });
    hub.createRepo('org/made-by-commit', { private: true });
    const answer = await get(`${hub.url}/api/models/org/made-by-commit/revision/main`);
    expect([answer.status, answer.headers['x-error-code']]).toEqual([401, 'RepoNotFound']);
    hub.createRepo('org/made-by-commit');
    expect((await get(`${hub.url}/api/models/org/made-by-commit/revision/main`)).status).toBe(401); // kept
  });

  it('records each request with its server and Authorization', async () => {
    const before = hub.requests.length;
    await get(`${hub.url}/api/models/org/m/revision/main`, { authorization: 'Bearer nobody' });
    expect(hub.requests.slice(before)).toEqual([
      {
        server: 'hub',
        method: 'GET',
        path: '/api/models/org/m/revision/main',
        query: {},
        authorization: 'Bearer nobody',
      },
    ]);
  });
});
