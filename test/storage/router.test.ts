import { EffectError } from '../../src/core/errors';
import { routeStorage } from '../../src/storage/router';
import type { StorageProvider } from '../../src/ports';
import { effectError } from '../helpers/effect-error';

interface Call {
  readonly provider: string;
  readonly uri: string;
  readonly targetDir: string;
}

const recorder = (name: string, schemes: ReadonlyArray<string>, calls: Call[]): StorageProvider => ({
  schemes,
  download: (uri, targetDir) => {
    calls.push({ provider: name, uri, targetDir });
    return Promise.resolve();
  },
});

describe('routeStorage', () => {
  const setup = () => {
    const calls: Call[] = [];
    const route = routeStorage([
      recorder('local', ['file'], calls),
      recorder('http', ['http', 'https'], calls),
      recorder('s3', ['s3'], calls),
    ]);
    return { calls, route };
  };

  it.each([
    ['/data/m1', 'local'],
    ['file:///data/m1', 'local'],
    ['http://example.com/m.bin', 'http'],
    ['https://example.com/m.bin', 'http'],
    ['s3://models/model1', 's3'],
  ])('routes %s to the %s provider', async (uri, provider) => {
    const { calls, route } = setup();
    await route(uri, '/tmp/target', new AbortController().signal);
    expect(calls).toEqual([{ provider, uri, targetDir: '/tmp/target' }]);
  });

  it('rejects permanently when the protocol is not supported (D1)', async () => {
    const { calls, route } = setup();
    const error = await effectError(
      route('sss://models/model1', '/tmp/target', new AbortController().signal),
    );
    expect(error).toMatchObject({ kind: 'unsupported-scheme', retryable: false });
    expect(error.message).toBe(
      'protocol not supported for storageUri sss://models/model1; supported: file, http, https, s3',
    );
    expect(calls).toEqual([]);
  });

  it('rejects permanently when the storage URI is empty (D2)', async () => {
    const { calls, route } = setup();
    const error = await effectError(route('', '/tmp/target', new AbortController().signal));
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).toBe('there is no storageUri supplied');
    expect(calls).toEqual([]);
  });

  it('rejects permanently when the URI has no protocol (D3)', async () => {
    const { calls, route } = setup();
    const error = await effectError(
      route('s3:://models/model1', '/tmp/target', new AbortController().signal),
    );
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).toBe('there is no protocol specified for the storageUri s3:://models/model1');
    expect(calls).toEqual([]);
  });

  it.each([
    ['a query string', 'abfs://acct/c/m?sig=secret', 'abfs://acct/c/m'],
    ['user info', 'sss://user:secret@host/m', 'sss://host/m'],
    ['a fragment', 'gcs://bucket/m#secret', 'gcs://bucket/m'],
  ])('keeps %s out of its messages', async (_label, uri, shown) => {
    const { route } = setup();
    const error = await effectError(route(uri, '/tmp/t', new AbortController().signal));
    expect(error.message).not.toContain('secret');
    expect(error.message).toContain(shown);
  });

  it('keeps secrets out of the message for a URI without a protocol', async () => {
    const { route } = setup();
    const error = await effectError(
      route('s3:/bucket/m?token=secret', '/tmp/t', new AbortController().signal),
    );
    expect(error).toMatchObject({ kind: 'invalid-uri', retryable: false });
    expect(error.message).not.toContain('secret');
  });

  it('sends the URIs a claiming provider claims to it, and the other URIs of that scheme by scheme', async () => {
    const calls: Call[] = [];
    const azure = recorder('azure', [], calls);
    const route = routeStorage(
      [recorder('http', ['http', 'https'], calls)],
      [
        {
          name: 'azure',
          claims: (uri) => new URL(uri).hostname.endsWith('.blob.core.windows.net'),
          download: azure.download,
        },
      ],
    );
    const signal = new AbortController().signal;
    await route('https://acct.blob.core.windows.net/models/m1', '/tmp/a', signal);
    await route('https://example.com/m1.tar.gz', '/tmp/b', signal);
    expect(calls.map((call) => [call.provider, call.targetDir])).toEqual([
      ['azure', '/tmp/a'],
      ['http', '/tmp/b'],
    ]);
  });

  it('passes provider failures through unchanged', async () => {
    const failure = new EffectError('boom', true, { kind: 'network' });
    const route = routeStorage([{ schemes: ['http'], download: () => Promise.reject(failure) }]);
    await expect(route('http://x/m', '/tmp/t', new AbortController().signal)).rejects.toBe(failure);
  });

  it('throws when two providers claim one scheme', () => {
    const calls: Call[] = [];
    expect(() => routeStorage([recorder('a', ['http'], calls), recorder('b', ['http'], calls)])).toThrow(
      'two storage providers serve the scheme http',
    );
  });
});
