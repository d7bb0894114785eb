/** Tests of the redaction: URIs, texts with secrets of known shapes, registered secrets, values and log lines. */
import { redact, redactLogLine, redactUri, registerSecret, SecretRegistry } from '../../src/core/redact';
import { relativeCost } from '../helpers/relative-cost';

/** Texts holding a secret of each known shape, and what they show as. */
const hiddenCases: ReadonlyArray<readonly [string, string, string]> = [
  [
    'the user info and query of an http URL',
    'cannot fetch http://user:pw@host:8080/m.tgz?sig=abc: refused',
    'cannot fetch http://host:8080/m.tgz refused',
  ],
  [
    'every URL of the text, of any scheme',
    'GET https://a/x?token=1 then s3://key:secret@b/y#frag failed',
    'GET https://a/x then s3://b/y failed',
  ],
  ['a URL in quotes', 'bad URL "gs://t@c/z?x=1"', 'bad URL "gs://c/z"'],
  ['a Bearer token', 'sent Authorization Bearer abc.def-123', 'sent Authorization Bearer [REDACTED]'],
  ['Basic credentials', 'header Basic dXNlcjpwYXNzd29yZA== refused', 'header Basic [REDACTED] refused'],
  ['an Authorization header', 'authorization: tok_abc123; next', 'authorization: [REDACTED]; next'],
  ['an x-api-key header in JSON', '{"x-api-key":"k3y-v4lue"}', '{"x-api-key":"[REDACTED]"}'],
  [
    'SigV4 query parameters outside a URL',
    '/m.bin?X-Amz-Credential=AKIAX%2F2025&X-Amz-Signature=f00d&X-Amz-Date=1',
    '/m.bin?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Date=1',
  ],
  [
    'an Azure SAS signature',
    'request /c/b?sv=2022&sig=ab%2Bc%3D done',
    'request /c/b?sv=2022&sig=[REDACTED] done',
  ],
  [
    'an account key in a connection string',
    'DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Zm9v+YmFy==;EndpointSuffix=x',
    'DefaultEndpointsProtocol=https;AccountName=a;AccountKey=[REDACTED];EndpointSuffix=x',
  ],
  ['a password parameter', 'login password=hunter22&user=x', 'login password=[REDACTED]&user=x'],
  ['an AWS access key id', 'key ASIAIOSFODNN7EXAMPLE used', 'key [REDACTED] used'],
  [
    'a JSON web token',
    'token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzYSJ9.c2lnbmF0dXJl expired',
    'token [REDACTED] expired',
  ],
  [
    // EKS's bearer token (aws-iam-authenticator, `aws eks get-token`): re-read per request, never registered, and
    // quoted back by a watch's ERROR event or a webhook's refusal it would show.
    'an EKS token',
    'watch ERROR: token k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9uPUdldENhbGxlcklkZW50aXR5 rejected',
    'watch ERROR: token [REDACTED] rejected',
  ],
  [
    'a private key',
    'key -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- loaded',
    'key [REDACTED] loaded',
  ],
  [
    "what S3's SignatureDoesNotMatch repeats",
    '<SignatureProvided>abc123</SignatureProvided><AWSAccessKeyId>AKIDX</AWSAccessKeyId>',
    '<SignatureProvided>[REDACTED]</SignatureProvided><AWSAccessKeyId>[REDACTED]</AWSAccessKeyId>',
  ],
  [
    'a canonical request S3 repeats, quotes in it',
    '<CanonicalRequest>GET\n/b/k\nif-match:"e1"\nx-amz-security-token:FQoGZXIvYXdz\n</CanonicalRequest>',
    '<CanonicalRequest>[REDACTED]</CanonicalRequest>',
  ],
];

describe('redactUri', () => {
  it.each([
    [
      'https://acct.blob.core.windows.net/c/m.bin?sv=1&sig=secret',
      'https://acct.blob.core.windows.net/c/m.bin',
    ],
    ['https://user:pass@example.com/m.bin#frag', 'https://example.com/m.bin'],
    ['s3://AKIA:secret@bucket/key?x-amz-security-token=t', 's3://bucket/key'],
    ['file:///models/m1#token=x', 'file:///models/m1'],
    ['http://[::1]:8080/m.bin?x=1', 'http://[::1]:8080/m.bin'],
    ['s3://models/model1', 's3://models/model1'],
    ['/data/m1', '/data/m1'],
    ['/data/m1?token=x', '/data/m1'],
  ])('shows %s as %s', (uri, shown) => {
    expect(redactUri(uri)).toBe(shown);
  });

  it.each([
    ['a password with a raw /', 'http://user:pa/ss@host/m.bin', 'http://host/m.bin'],
    ['a password with a raw ?', 'http://user:p?ss@host/m.bin', 'http://host/m.bin'],
    ['a password with a raw #', 'https://user:p#ss@host/m.bin', 'https://host/m.bin'],
    ['user info without a scheme', 'bob:pw@storage.example/m.bin', 'storage.example/m.bin'],
  ])('drops %s', (_, uri, shown) => {
    expect(redactUri(uri)).toBe(shown);
  });

  it.each([
    ['an @ in the path', 'https://host/models/foo@v2/m.bin'],
    ['an @ after a port', 'http://host:8080/a@b'],
  ])('keeps a URL with %s as it is', (_, uri) => {
    expect(redactUri(uri)).toBe(uri);
  });
});

describe('redact (text)', () => {
  it.each([
    'model loaded',
    'local path /models/m1 does not exist',
    'Basic authentication failed',
    'Token Authorization failed. Token either incorrect, expired, or not provided correctly',
    'GET https://host/m.bin returned HTTP 404: Not Found',
    'https://host/models/foo@v2/m.bin',
    'expected a Kubernetes quantity such as "100Mi", got "lots"',
  ])('leaves %j as it is', (text) => {
    expect(redact(text)).toBe(text);
  });

  it.each(hiddenCases)('hides %s', (_, text, expected) => {
    expect(redact(text)).toBe(expected);
  });

  // A /status page and /metrics are redacted as text: a model name (any text but `/`, `\\`, NUL) is a JSON string
  // or a label value there, and a match that left it cut the whole page short (found by a probe).
  it.each([
    'token=abc"x',
    'password=p"',
    'cookie: a"b',
    'sig=a"b',
    '<Signature>a',
    '<StringToSign>a"b',
    '-----BEGIN RSA PRIVATE KEY----- a',
    '-----BEGIN PRIVATE KEY-----\nMIIE"x',
  ])('keeps JSON text valid around a string holding %j, the rest of it shown', (name) => {
    const shown = redact(JSON.stringify([{ model: name, phase: 'Loaded' }, { model: 'next' }]));
    const parsed = JSON.parse(shown) as Array<Record<string, string>>;
    expect(parsed[0]!['phase']).toBe('Loaded');
    expect(parsed[1]).toEqual({ model: 'next' });
    expect(parsed[0]!['model']).toContain('[REDACTED]');
  });

  it('still hides a value holding a backslash whole, and a private key cut short in JSON text', () => {
    expect(redact('login password=ab\\cd&user=x')).toBe('login password=[REDACTED]&user=x');
    expect(redact(JSON.stringify({ err: 'key -----BEGIN PRIVATE KEY-----\nMIIE"q' }))).toBe(
      '{"err":"key [REDACTED]"}',
    );
  });

  it('changes nothing more when applied twice', () => {
    const text = 'GET https://u:p@h/x?sig=1 Bearer abc sig=def AccountKey=ghi <Signature>x</Signature>';
    expect(redact(redact(text))).toBe(redact(text));
  });
});

describe('SecretRegistry', () => {
  it('hides a registered value wherever it appears, as it is, URL-encoded and JSON-escaped', () => {
    const registry = new SecretRegistry();
    registry.register('k3y/with "quotes"+plus');
    expect(registry.redactText('echo k3y/with "quotes"+plus!')).toBe('echo [REDACTED]!');
    expect(registry.redactText('q=k3y%2Fwith%20%22quotes%22%2Bplus')).toBe('q=[REDACTED]');
    expect(registry.redactText(JSON.stringify({ echoed: 'k3y/with "quotes"+plus' }))).toBe(
      '{"echoed":"[REDACTED]"}',
    );
  });

  it('hides the credentials of a `<scheme> <credentials>` value on their own too', () => {
    const registry = new SecretRegistry();
    registry.register('Token opaque-credential-1');
    expect(registry.redactText('server said: bad key opaque-credential-1')).toBe(
      'server said: bad key [REDACTED]',
    );
  });

  it('hides the longer of two registered values that overlap whole', () => {
    const registry = new SecretRegistry();
    registry.register('secret-one');
    registry.register('secret-one-and-more');
    expect(registry.redactText('x secret-one-and-more y secret-one')).toBe('x [REDACTED] y [REDACTED]');
  });

  it('ignores values too short to be a secret, so common words are not hidden', () => {
    const registry = new SecretRegistry();
    registry.register('json');
    registry.register('1');
    expect(registry.redactText('json 1')).toBe('json 1');
  });

  it('hides regular-expression characters literally', () => {
    const registry = new SecretRegistry();
    registry.register('a.b*c(d)[e]');
    expect(registry.redactText('axb*c(d)[e] a.b*c(d)[e]')).toBe('axb*c(d)[e] [REDACTED]');
  });

  it('hides the keys of the last reads of a rotating source, and forgets older ones unless registered otherwise', () => {
    const registry = new SecretRegistry();
    const key = (i: number): string => `rotated-key-${i}-abcdef`;
    const inference = (i: number): string => `inference-${i}-abcdef`;
    registry.register(key(0)); // also a secret of its own: hidden for good
    for (let i = 0; i < 10; i++) registry.registerRotating('key-file', [key(i), inference(i)]);
    registry.registerRotating('key-file', [key(9), inference(9)]); // the same keys read again
    registry.registerRotating('other-file', [key(1)]);
    const shown = (i: number): string => registry.redactText(`${key(i)} ${inference(i)}`);
    // The current read and the three before it: a call still under way may carry (and echo) a key just rotated.
    for (const i of [9, 8, 7, 6]) expect(shown(i)).toBe('[REDACTED] [REDACTED]');
    for (const i of [5, 2]) expect(shown(i)).toBe(`${key(i)} ${inference(i)}`);
    expect(shown(0)).toBe(`[REDACTED] ${inference(0)}`);
    expect(shown(1)).toBe(`[REDACTED] ${inference(1)}`);
  });

  it('hides a registered value inside a URL the text holds, its path included', () => {
    const registry = new SecretRegistry();
    registry.register('path-secret-123');
    expect(registry.redactText('GET https://h/path-secret-123/x?y=1 failed')).toBe(
      'GET https://h/[REDACTED]/x failed',
    );
  });

  // A model each with its own SAS in its URL registers one secret per model, each between log lines: the whole
  // pattern was compiled again at each (1,000 models: 47 s of the event loop; 2,000: 266 s), and every line ran
  // through all of them.
  // What azureBlobStorage registers for each: the SAS, and its signature alone (base64 of an HMAC: any start).
  const sigOf = (i: number): string => `${((i + 1) * 2_654_435_761).toString(36)}Zm9v${i.toString(36)}YmFy=`;
  const sasOf = (i: number): string => `sv=2024-08-04&sr=c&sp=rl&sig=${sigOf(i)}`;
  const registerSas = (registry: SecretRegistry, i: number): void => {
    registry.register(sasOf(i));
    registry.register(sigOf(i));
  };
  const logLine = '{"level":30,"time":1,"model":"resnet-50","op":"Load","msg":"model loading"}';

  it('costs time linear in the secrets registered one at a time between redactions', () => {
    const interleaved = (count: number) => () => {
      const registry = new SecretRegistry();
      for (let i = 0; i < count; i++) {
        registerSas(registry, i);
        registry.redactText(logLine);
      }
    };
    // Linear: ~10 times the work; a pattern compiled anew at each registration: ~100 times.
    expect(relativeCost(interleaved(300), interleaved(30))).toBeLessThan(30);
    const registry = new SecretRegistry();
    for (let i = 0; i < 5_000; i++) registerSas(registry, i);
    expect(registry.redactText(`echo ${sasOf(4_321)}, then ${sigOf(17).toUpperCase()}`)).toBe(
      'echo [REDACTED], then [REDACTED]',
    );
  }, 120_000);

  it('is what `redact` and `registerSecret` use for the whole process', () => {
    registerSecret('process-wide-token');
    expect(redact({ note: 'saw process-wide-token' })).toEqual({ note: 'saw [REDACTED]' });
  });
});

describe('redact (values)', () => {
  it('redacts every string of an object, keys included, without changing the original', () => {
    const value = { reason: 'GET https://h/x?sig=1', nested: [{ 'Bearer abc': 2 }, null, 3, true] };
    expect(redact(value)).toEqual({
      reason: 'GET https://h/x',
      nested: [{ 'Bearer [REDACTED]': 2 }, null, 3, true],
    });
    expect(value.reason).toBe('GET https://h/x?sig=1');
  });

  it('copies an Error with its prototype, message, stack and cause redacted', () => {
    const cause = new Error('fetch https://u:pw@h/x failed');
    const error = Object.assign(new TypeError('GET https://h/x?sig=1', { cause }), { code: 'E1' });
    const shown = redact(error);
    expect(shown).toBeInstanceOf(TypeError);
    expect(shown.message).toBe('GET https://h/x');
    expect(shown.stack).not.toContain('sig=1');
    expect((shown.cause as Error).message).toBe('fetch https://h/x failed');
    expect((shown as unknown as { code: string }).code).toBe('E1');
    expect(error.message).toBe('GET https://h/x?sig=1');
  });

  it('returns other class instances as they are', () => {
    const date = new Date(0);
    expect(redact({ date }).date).toBe(date);
  });

  it('replaces what lies deeper than 64 levels by a note instead of overflowing the stack', () => {
    let deep: unknown = 'https://h/x?sig=1';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    let shown: unknown = redact(deep);
    let depth = 0;
    while (Array.isArray(shown)) {
      shown = (shown as unknown[])[0];
      depth++;
    }
    expect([depth, shown]).toEqual([64, '[more than 64 levels deep: not shown]']);
  });
});

describe('redactLogLine', () => {
  it('returns a line with nothing to hide as the same string', () => {
    const line = '{"level":"info","model":"m1","storageUri":"https://h/m.bin","msg":"model loaded"}\n';
    expect(redactLogLine(line)).toBe(line);
  });

  it('hides secrets in any field, nested or escaped, and keeps one valid JSON line', () => {
    const fields = {
      level: 'error',
      err: { message: 'GET https://u:pw@h/x?sig=1 "quoted"', stack: 'Error\n  at Bearer abc' },
      msg: 'say "Bearer xyz"\\',
    };
    const shown = redactLogLine(`${JSON.stringify(fields)}\n`);
    expect(shown.endsWith('\n')).toBe(true);
    expect(JSON.parse(shown)).toEqual({
      level: 'error',
      err: { message: 'GET https://h/x "quoted"', stack: 'Error\n  at Bearer [REDACTED]' },
      msg: 'say "Bearer [REDACTED]"\\',
    });
  });

  it.each(hiddenCases)('finds and hides %s in a log line', (_, text, expected) => {
    expect(redactLogLine(`${JSON.stringify({ level: 'info', msg: text })}\n`)).toBe(
      `${JSON.stringify({ level: 'info', msg: expected })}\n`,
    );
  });

  it('redacts a line that is not JSON as text', () => {
    expect(redactLogLine('crash at https://u:pw@h/x\n')).toBe('crash at https://h/x\n');
  });
});
