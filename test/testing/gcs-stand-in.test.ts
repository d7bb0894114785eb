/** Tests of the GCS JSON API stand-in spoken to directly: the answers the SDK reads, as the API gives them. */
import { startGcsStandIn, type GcsStandIn } from '../../src/testing/gcs-stand-in';

let gcs: GcsStandIn;
beforeAll(async () => {
  gcs = await startGcsStandIn({ maxPageSize: 2, requireAuth: false });
  gcs.put('b', 'dir/a.txt', 'hello world');
  gcs.put('b', 'dir/sub/b.txt', 'b');
  gcs.put('b', 'dir/sub/c.txt', 'c');
});
afterAll(() => gcs.close());

const get = async (path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gcs.url}${path}`, { headers });
  return { status: response.status, headers: response.headers, text: await response.text() };
};

describe('startGcsStandIn', () => {
  it('lists with prefix and delimiter: objects as items, deeper names as prefixes', async () => {
    const page = JSON.parse((await get('/storage/v1/b/b/o?prefix=dir/&delimiter=/')).text) as Record<
      string,
      unknown
    >;
    expect(page).toMatchObject({ kind: 'storage#objects', prefixes: ['dir/sub/'] });
    expect((page.items as Array<{ name: string }>).map((item) => item.name)).toEqual(['dir/a.txt']);
  });

  it('pages at most maxPageSize items, with a nextPageToken until the last page', async () => {
    const first = JSON.parse((await get('/storage/v1/b/b/o?prefix=dir/')).text) as { nextPageToken: string };
    expect(typeof first.nextPageToken).toBe('string');
    const last = JSON.parse(
      (await get(`/storage/v1/b/b/o?prefix=dir/&pageToken=${first.nextPageToken}`)).text,
    ) as { items: Array<{ name: string }> };
    expect(last).not.toHaveProperty('nextPageToken');
    expect(last.items.map((item) => item.name)).toEqual(['dir/sub/c.txt']);
  });

  it("answers metadata with the object's size, generation, md5 and crc32c", async () => {
    const metadata = JSON.parse((await get('/storage/v1/b/b/o/dir%2Fa.txt')).text) as Record<string, string>;
    expect(metadata).toMatchObject({
      name: 'dir/a.txt',
      size: '11',
      crc32c: 'yZRlqg==',
      md5Hash: 'XrY7u+Ae7tCTyyK7j1rNww==',
    });
    expect(metadata.generation).toMatch(/^\d+$/);
  });

  it('serves bytes with alt=media, a Range as 206 with Content-Range, an unsatisfiable one as 416', async () => {
    expect((await get('/storage/v1/b/b/o/dir%2Fa.txt?alt=media')).text).toBe('hello world');
    const ranged = await get('/download/storage/v1/b/b/o/dir%2Fa.txt?alt=media', { range: 'bytes=6-' });
    expect([ranged.status, ranged.text, ranged.headers.get('content-range')]).toEqual([
      206,
      'world',
      'bytes 6-10/11',
    ]);
    const beyond = await get('/storage/v1/b/b/o/dir%2Fa.txt?alt=media', { range: 'bytes=11-' });
    expect(beyond.status).toBe(416);
  });

  it('answers 404 for another generation and 412 when ifGenerationMatch does not hold', async () => {
    const { generation } = gcs.put('b', 'versioned', 'v1');
    expect((await get(`/storage/v1/b/b/o/versioned?alt=media&generation=${generation}`)).text).toBe('v1');
    gcs.put('b', 'versioned', 'v2');
    const gone = await get(`/storage/v1/b/b/o/versioned?alt=media&generation=${generation}`);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.text)).toMatchObject({ error: { code: 404, errors: [{ reason: 'notFound' }] } });
    expect((await get(`/storage/v1/b/b/o/versioned?alt=media&ifGenerationMatch=${generation}`)).status).toBe(
      412,
    );
  });

  it('exchanges an accepted subject token for an access token, and refuses another one', async () => {
    gcs.acceptSubjectToken('subject-one');
    const exchange = (subject: string) =>
      fetch(`${gcs.url}/v1/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          subject_token: subject,
        }),
      });
    const granted = (await (await exchange('subject-one')).json()) as Record<string, unknown>;
    expect(granted.token_type).toBe('Bearer');
    expect(granted.access_token).toMatch(/^ya29\./);
    const refused = await exchange('subject-two');
    expect([refused.status, ((await refused.json()) as { error: string }).error]).toEqual([
      400,
      'invalid_grant',
    ]);
  });

  it('cuts a media body after the bytes asked for, once', async () => {
    gcs.injectFault('media', { cutAfterBytes: 5 });
    await expect(get('/storage/v1/b/b/o/dir%2Fa.txt?alt=media')).rejects.toThrow();
    expect((await get('/storage/v1/b/b/o/dir%2Fa.txt?alt=media')).text).toBe('hello world');
  });
});
