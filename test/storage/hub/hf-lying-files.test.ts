/**
 * hfStorage through the download engine against a Hub whose files are not what its tree lists: longer, shorter
 * or other bytes than the listed size and checksum (the LFS sha256, a small file's git blob id), under each framing
 * of a body (Content-Length, chunked, closed connection), one stream or ranged parts. Each fails `invalid-response`,
 * retryable (the commit is pinned: nothing changed, the answer is wrong), and no byte past the listed size is written.
 */
import { randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createSlots } from '../../../src/core/slots';
import { hfStorage } from '../../../src/storage/hub/hf-storage';
import { startHubStandIn, type BodyFraming, type HubStandIn } from '../../../src/testing/hub-stand-in';
import { effectError } from '../../helpers/effect-error';
import { useTempDir } from '../../helpers/temp-dir';

jest.setTimeout(30_000);

const staging = useTempDir('hf-lying');
const never = new AbortController().signal;
const config = '{"n":1234}';
const weights = randomBytes(4096);
// Past the size from which a file is fetched in ranges (part-plan.ts: 32 MiB).
const big = randomBytes(33 * 2 ** 20);

let hub: HubStandIn;
beforeAll(async () => {
  hub = await startHubStandIn();
  hub.commit('org/small', { 'config.json': config });
  hub.commit('org/lfs', { 'model.safetensors': weights });
  hub.commit('org/big', { 'model.safetensors': big });
});
afterAll(() => hub.close());
afterEach(() => {
  hub.injectFault('resolve', { status: 500 }, 0);
  hub.injectFault('cdn', { status: 500 }, 0);
});

const download = (repo: string) =>
  hfStorage({
    endpoint: hub.url,
    timeoutMs: 10_000,
    streams: 4,
    pool: createSlots(8),
    maxResumes: 2,
  }).download(`hf://${repo}`, staging.path, never);

/** The size of what landed at `name` in the staging dir (0 when nothing did). */
const landed = (name: string): Promise<number> =>
  stat(join(staging.path, name)).then(
    (stats) => stats.size,
    () => 0,
  );

const framings: ReadonlyArray<BodyFraming> = ['content-length', 'chunked', 'close'];

describe('hfStorage through the download engine, a small file listed at 10 bytes', () => {
  it.each(framings)(
    'fails when it is served 10 MiB, framed by %s, writing no byte past the 10',
    async (framing) => {
      hub.injectFault('resolve', { serve: Buffer.alloc(10 * 2 ** 20, 'x'), framing });
      const error = await effectError(download('org/small'));
      expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
      expect(error.message).toContain('10 bytes');
      expect(await landed('config.json')).toBeLessThanOrEqual(10);
    },
  );

  it.each(framings)('fails when it is served 5 bytes, framed by %s', async (framing) => {
    hub.injectFault('resolve', { serve: Buffer.from(config.slice(0, 5)), framing });
    const error = await effectError(download('org/small'));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(error.message).toContain('10 bytes');
  });

  it.each(framings)('fails when its 10 bytes are not the listed blob, framed by %s', async (framing) => {
    hub.injectFault('resolve', { serve: Buffer.from('{"n":9999}'), framing });
    const error = await effectError(download('org/small'));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(error.message).toContain('git blob');
  });

  it.each(framings)('is saved when its own bytes come framed by %s', async (framing) => {
    hub.injectFault('resolve', { serve: Buffer.from(config), framing });
    await download('org/small');
    expect(await readFile(join(staging.path, 'config.json'), 'utf8')).toBe(config);
  });
});

describe('hfStorage through the download engine, an LFS file', () => {
  it.each(framings)('fails when the CDN serves other bytes of its size, framed by %s', async (framing) => {
    hub.injectFault('cdn', { serve: randomBytes(weights.length), framing });
    const error = await effectError(download('org/lfs'));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(error.message).toContain('sha256');
  });

  it.each(framings)('fails when the CDN serves more than its size, framed by %s', async (framing) => {
    hub.injectFault('cdn', { serve: Buffer.concat([weights, randomBytes(2 ** 20)]), framing });
    const error = await effectError(download('org/lfs'));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(await landed('model.safetensors')).toBeLessThanOrEqual(weights.length);
  });

  it('fails when a big one comes in ranged parts of other bytes, each of the size asked', async () => {
    hub.injectFault('cdn', { serve: randomBytes(big.length) }, Infinity);
    const error = await effectError(download('org/big'));
    expect(error).toMatchObject({ kind: 'invalid-response', retryable: true });
    expect(error.message).toContain('sha256');
    expect(hub.requests.filter((r) => r.server === 'cdn' && r.range !== undefined).length).toBeGreaterThan(0);
  });
});
