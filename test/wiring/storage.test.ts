/**
 * storageRouter: the environment KServe's webhook gives its storage initializer reaches the providers — here
 * HF_XET_NUM_CONCURRENT_RANGE_GETS, the most connections one hf:// file is fetched over.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import * as E from 'fp-ts/Either';
import pino from 'pino';
import type { Env } from '../../src/core/env';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { startHubStandIn, type HubStandIn } from '../../src/testing/hub-stand-in';
import { defaultDownloadLimits } from '../../src/storage/download-limits';
import { downloadLimitsOf, storageRouter } from '../../src/wiring/storage';
import { useTempDir } from '../helpers/temp-dir';

const staging = useTempDir('wiring-storage');
const never = new AbortController().signal;
// Past the size from which a file is fetched in ranges (part-plan.ts: 32 MiB).
const big = randomBytes(34 * 2 ** 20);
const digest = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

let hub: HubStandIn;
beforeAll(async () => {
  hub = await startHubStandIn();
  hub.commit('org/big', { 'model.safetensors': big });
});
afterAll(() => hub.close());

/** Downloads hf://org/big with `env`, and the Range headers of the CDN requests it made. */
const download = async (env: Env): Promise<ReadonlyArray<string | undefined>> => {
  const router = storageRouter(defaultAppConfig, pino({ level: 'silent' }), { HF_ENDPOINT: hub.url, ...env });
  if (E.isLeft(router)) throw new Error(router.left);
  const before = hub.requests.length;
  await router.right.download('hf://org/big', staging.path, never);
  expect(digest(await readFile(`${staging.path}/model.safetensors`))).toBe(digest(big));
  return hub.requests
    .slice(before)
    .filter((request) => request.server === 'cdn')
    .map((request) => request.range);
};

describe('storageRouter', () => {
  it('fetches a big hf:// file in ranged parts (--download-streams) when HF_XET_NUM_CONCURRENT_RANGE_GETS is unset', async () => {
    expect((await download({})).some((range) => range !== undefined)).toBe(true);
  }, 30_000);

  it('fetches each hf:// file over one connection, no ranged parts, with HF_XET_NUM_CONCURRENT_RANGE_GETS=1', async () => {
    expect(await download({ HF_XET_NUM_CONCURRENT_RANGE_GETS: '1' })).toEqual([undefined]);
  }, 30_000);

  it('refuses an HF_XET_NUM_CONCURRENT_RANGE_GETS that is no whole number, naming it', () => {
    const router = storageRouter(defaultAppConfig, pino({ level: 'silent' }), {
      HF_XET_NUM_CONCURRENT_RANGE_GETS: 'many',
    });
    expect(E.isLeft(router) && router.left).toMatch(
      /^invalid Hugging Face Hub settings: HF_XET_NUM_CONCURRENT_RANGE_GETS: expected a whole number/,
    );
  });
});

describe('downloadLimitsOf', () => {
  it('gives the library defaults for the flags’ defaults: the two tables of default caps agree', () => {
    const { names, minRate, ...caps } = downloadLimitsOf(defaultAppConfig);
    const { minRate: libraryMinRate, ...libraryCaps } = defaultDownloadLimits;
    expect(caps).toEqual(libraryCaps);
    expect({ ...minRate, name: undefined }).toEqual({ ...libraryMinRate, name: undefined });
    expect(names?.maxModelBytes).toBe('--max-model-bytes');
  });
});
