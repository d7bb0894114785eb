/** hfStorage's failures against the Hub stand-in: each by its kind, permanent or retried, saying what to do, never showing the token. */
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { hfStorage, type HfStorageOptions } from '../../../src/storage/hub/hf-storage';
import { startHttpServer } from '../../../src/testing/http-server';
import { startHubStandIn, type HubStandIn } from '../../../src/testing/hub-stand-in';
import { effectError } from '../../helpers/effect-error';
import { SecretScan } from '../../helpers/secrets';
import { useTempDir } from '../../helpers/temp-dir';

const staging = useTempDir('hf-errors');
const never = new AbortController().signal;
const reader = 'hf_errorsTestReader9';
const stranger = 'hf_errorsTestStranger8';

let hub: HubStandIn;
beforeAll(async () => {
  hub = await startHubStandIn();
  hub.commit('org/public', { 'config.json': '{}', 'model.bin': 'weights' });
  hub.createRepo('org/gated', { gated: 'manual' });
  hub.commit('org/gated', { 'config.json': '{}', 'model.bin': 'gated weights' });
  hub.createRepo('org/private', { private: true });
  hub.commit('org/private', { 'config.json': '{}' });
  hub.addToken(reader, ['org/gated', 'org/private']);
  hub.addToken(stranger);
});
afterAll(() => hub.close());

/** A download into a staging dir of its own, as each attempt of the loader's has (a failed one leaves its files). */
const download = async (uri: string, options: Partial<HfStorageOptions> = {}) =>
  effectError(
    hfStorage({ endpoint: hub.url, ...options }).download(
      uri,
      await mkdtemp(join(staging.path, 'attempt-')),
      never,
    ),
  );

describe('hfStorage failures', () => {
  it('fails a missing repo for good without a token (the Hub answers 401), saying to set HF_TOKEN', async () => {
    const error = await download('hf://org/nope');
    expect(error).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
    expect(error.message).toContain(`repository org/nope at ${hub.url} not found`);
    expect(error.message).toContain('set HF_TOKEN to a token that can read it');
    expect(error.message).toContain('HTTP 401 RepoNotFound');
  });

  it('fails a missing repo as not-found with a token (the Hub answers 404)', async () => {
    const error = await download('hf://org/nope', { token: stranger });
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('or HF_TOKEN cannot read it');
  });

  it('fails a private repo like a missing one for a token that cannot read it, and downloads it with one that can', async () => {
    expect(await download('hf://org/private', { token: stranger })).toMatchObject({ kind: 'not-found' });
    const provider = hfStorage({ endpoint: hub.url, token: reader });
    await expect(provider.download('hf://org/private', staging.path, never)).resolves.toBeUndefined();
  });

  it('fails an unknown revision as not-found naming the repo and the revision', async () => {
    const error = await download('hf://org/public:no-such-branch');
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain(`revision "no-such-branch" not found in org/public at ${hub.url}`);
    expect(error.message).toContain('RevisionNotFound');
  });

  it("fails a gated repo's files for good without a token (401) and with one not granted (403)", async () => {
    const before = hub.requests.length;
    const anonymous = await download('hf://org/gated');
    expect(anonymous).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
    expect(anonymous.message).toContain('org/gated is a gated repo: ask for access and set HF_TOKEN');
    // The tree is public: the refusal came at the first file, and it stopped the others.
    expect(hub.requests.slice(before).filter((r) => r.path.includes('/resolve/')).length).toBeGreaterThan(0);

    const notGranted = await download('hf://org/gated', { token: stranger });
    expect(notGranted).toMatchObject({ kind: 'http-status', status: 403, retryable: false });
    expect(notGranted.message).toContain('has not been granted access');
  });

  it('fails for good when the Hub does not accept the token, never showing it', async () => {
    const error = await download('hf://org/public', { token: 'hf_unknownToken77' });
    expect(error).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
    expect(error.message).toContain('does not accept HF_TOKEN');
    new SecretScan([{ label: 'HF_TOKEN', value: 'hf_unknownToken77' }])
      .add('message', error.message)
      .expectNoLeaks();
  });

  it.each([503, 429, 500])('retries a %i from the API', async (status) => {
    hub.injectFault('revision', { status });
    expect(await download('hf://org/public')).toMatchObject({ kind: 'http-status', status, retryable: true });
  });

  it('retries a 502 from the tree API', async () => {
    hub.injectFault('tree', { status: 502 });
    expect(await download('hf://org/public')).toMatchObject({
      kind: 'http-status',
      status: 502,
      retryable: true,
    });
  });

  it("carries the API's Retry-After on a 429, for the loader's retry", async () => {
    const busy = await startHttpServer((_request, response) => {
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      response.end('{"error":"Too Many Requests"}');
    });
    try {
      const error = await download('hf://org/public', { endpoint: busy.url });
      expect(error).toMatchObject({ kind: 'http-status', status: 429, retryable: true, retryAfterMs: 7000 });
    } finally {
      await busy.close();
    }
  });

  it('fails a listed file the Hub cannot find at the commit as not-found', async () => {
    hub.injectFault('resolve', { status: 404 });
    const error = await download('hf://org/public');
    expect(error).toMatchObject({ kind: 'not-found', retryable: false });
    expect(error.message).toContain('is listed but not found in org/public');
  });

  it('retries a Hub it cannot reach (network)', async () => {
    const closed = await startHttpServer(() => undefined);
    await closed.close();
    const error = await download('hf://org/public', { endpoint: closed.url });
    expect(error).toMatchObject({ kind: 'network', retryable: true });
  });

  it('blames no token when the API redirected off the endpoint, where the token was not sent', async () => {
    const authorizations: Array<string | undefined> = [];
    const elsewhere = await startHttpServer((request, response) => {
      authorizations.push(request.headers.authorization);
      response.writeHead(401, { 'x-error-code': 'RepoNotFound' });
      response.end('{"error":"Repository not found"}');
    });
    const redirecting = await startHttpServer((request, response) => {
      response.writeHead(302, { location: `${elsewhere.url}${request.url ?? '/'}` });
      response.end();
    });
    try {
      const error = await download('hf://org/public', { endpoint: redirecting.url, token: reader });
      expect(error).toMatchObject({ kind: 'http-status', status: 401, retryable: false });
      expect(error.message).toContain('set HF_TOKEN to a token that can read it');
      expect(error.message).not.toContain('HF_TOKEN cannot read it');
      expect(authorizations).toEqual([undefined]);
    } finally {
      await redirecting.close();
      await elsewhere.close();
    }
  });

  it('fails a bad URI for good as invalid-uri', async () => {
    expect(await download('hf://org')).toMatchObject({ kind: 'invalid-uri', retryable: false });
  });
});
