/** hfStorage with the production file fetcher (httpFileFetcher) against the Hub stand-in: big LFS files in ranged parts, cuts resumed, the token at the Hub alone. */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSlots } from '../../../src/core/slots';
import { httpFileFetcher } from '../../../src/storage/http/http-file';
import { hfStorage } from '../../../src/storage/hub/hf-storage';
import { startHubStandIn, type HubStandIn } from '../../../src/testing/hub-stand-in';
import { readFiles } from '../../helpers/file-tree';
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
    fetchFile: httpFileFetcher({
      connectTimeoutMs: 10_000,
      idleTimeoutMs: 10_000,
      streams: 4,
      pool: createSlots(8),
      maxResumes: 5,
    }),
  });

describe('hfStorage with httpFileFetcher', () => {
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
