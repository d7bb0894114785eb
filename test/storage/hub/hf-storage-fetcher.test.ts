/** hfStorage through the download engine against the Hub stand-in: big LFS files in ranged parts, cuts resumed, the token at the Hub alone. */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSlots } from '../../../src/core/slots';
import type { DownloadProgress } from '../../../src/ports';
import { hfStorage } from '../../../src/storage/hub/hf-storage';
import { partBytesFor } from '../../../src/storage/parts/part-plan';
import { patternBlock, rangedBody, repeatedSlice } from '../../../src/testing/ranged-body';
import { startHubStandIn, type HubStandIn } from '../../../src/testing/hub-stand-in';
import { readFiles } from '../../helpers/file-tree';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';

const staging = useTempDir('hf-fetcher');
const never = new AbortController().signal;
const token = 'hf_fetcherTestToken5';
// Past the size from which a file is fetched in ranges (part-plan.ts: 32 MiB).
const big = randomBytes(34 * 2 ** 20);
const digest = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

let hub: HubStandIn;
beforeAll(async () => {
  hub = await startHubStandIn();
  hub.createRepo('org/big', { private: true });
  hub.commit('org/big', { 'model.safetensors': big, 'config.json': '{"big":true}' });
  hub.addToken(token, ['org/big']);
});
afterAll(() => hub.close());

const provider = () =>
  hfStorage({
    endpoint: hub.url,
    token,
    timeoutMs: 10_000,
    streams: 4,
    pool: createSlots(8),
    maxResumes: 5,
  });

describe('hfStorage through the download engine', () => {
  it('fetches a big LFS file from the CDN in ranged parts, the token sent to the Hub and never to the CDN', async () => {
    const before = hub.requests.length;
    await provider().download('hf://org/big', staging.path, never);

    expect(digest(await readFile(`${staging.path}/model.safetensors`))).toBe(digest(big));
    expect(await readFiles(staging.path)).toMatchObject({ 'config.json': '{"big":true}' });
    const seen = hub.requests.slice(before);
    const cdn = seen.filter((r) => r.server === 'cdn');
    expect(cdn.filter((r) => r.range !== undefined).length).toBeGreaterThan(0);
    expect(cdn.every((r) => r.authorization === undefined)).toBe(true);
    expect(seen.filter((r) => r.server === 'hub').every((r) => r.authorization === `Bearer ${token}`)).toBe(
      true,
    );
  }, 30_000);

  it('resumes a body the CDN cuts, and ends with the same bytes', async () => {
    hub.injectFault('cdn', { cutAfterBytes: 3 * 2 ** 20 });
    await provider().download('hf://org/big', staging.path, never);
    expect(digest(await readFile(`${staging.path}/model.safetensors`))).toBe(digest(big));
  }, 30_000);
});

describe('hfStorage in parts, against a Hub whose one big file is a rangedBody', () => {
  const serve = useHttpServers();
  const size = 40 * 2 ** 20 + 12_345;

  it('asks for exactly the ranges it writes, so no answer is dropped part-way', async () => {
    const body = rangedBody({ size, bytesPerSecond: 50e6 });
    const sha = 'd'.repeat(40);
    const server = await serve((request, response) => {
      const path = new URL(request.url ?? '/', 'http://hub').pathname;
      const json = { 'content-type': 'application/json' };
      if (path.startsWith('/api/models/org/ranged/revision/'))
        return void response.writeHead(200, json).end(JSON.stringify({ sha }));
      if (path.startsWith('/api/models/org/ranged/tree/'))
        return void response
          .writeHead(200, json)
          .end(JSON.stringify([{ type: 'file', path: 'm.bin', size }]));
      body.handle(request, response);
    });
    const reports: DownloadProgress[] = [];
    await hfStorage({ endpoint: server.url, timeoutMs: 5_000, streams: 4, maxResumes: 3 }).download(
      'hf://org/ranged',
      staging.path,
      never,
      (report) => reports.push(report),
    );
    expect(digest(await readFile(`${staging.path}/m.bin`))).toBe(
      digest(repeatedSlice(patternBlock, 0, size)),
    );
    expect(body.requests[0]?.range).toBe(`bytes=0-${partBytesFor(size, 4) - 1}`);
    expect(body.requests.every((request) => request.status === 206)).toBe(true);
    // Every answer was of exactly the bytes asked: nothing was sent that was not written.
    expect(body.sentBytes()).toBe(size);
    expect(reports.at(-1)).toMatchObject({ done: true, bytes: size });
  }, 30_000);
});
