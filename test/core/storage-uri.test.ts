import { left, right } from 'fp-ts/Either';
import { redact } from '../../src/core/redact';
import { parseHostHeaders, parseStorageUri, redactUri } from '../../src/core/storage-uri';

describe('parseStorageUri', () => {
  it.each([
    ['/data/m1', 'file'],
    ['file:///data/m1', 'file'],
    ['s3://models/model1', 's3'],
    ['gs://bucket/prefix', 'gs'],
    ['https://example.com/model.joblib', 'https'],
    ['http://127.0.0.1:8080/m.tar.gz', 'http'],
    ['sss://models/model1', 'sss'],
    ['S3://models/model1', 's3'],
  ])('gives %s the scheme %s', (uri, scheme) => {
    expect(parseStorageUri(uri)).toEqual(right({ scheme, uri }));
  });

  it('says no storageUri is supplied when the URI is empty', () => {
    expect(parseStorageUri('')).toEqual(left('there is no storageUri supplied'));
  });

  it.each(['s3:://models/model1', 's3:/x', 'models/model1', 'data/m1', ' s3://x'])(
    'says no protocol is specified for %j',
    (uri) => {
      expect(parseStorageUri(uri)).toEqual(left(`there is no protocol specified for the storageUri ${uri}`));
    },
  );
});

describe('redactUri', () => {
  it.each([
    [
      'https://acct.blob.core.windows.net/c/m.bin?sv=1&sig=secret',
      'https://acct.blob.core.windows.net/c/m.bin',
    ],
    ['https://user:pass@example.com/m.bin#frag', 'https://example.com/m.bin'],
    ['s3://models/model1', 's3://models/model1'],
    ['/data/m1', '/data/m1'],
  ])('shows %s as %s', (uri, shown) => {
    expect(redactUri(uri)).toBe(shown);
  });
});

describe('parseHostHeaders', () => {
  /** Why the variable `example.com-headers` = `text` is refused (fails the test when it is accepted). */
  const problemOf = (text: string): string => {
    const result = parseHostHeaders({ 'example.com-headers': text });
    if (result._tag === 'Right') throw new Error(`expected ${text} to be refused`);
    return result.left;
  };

  it('maps each <hostname>-headers variable to its headers, keyed by lower-case host', () => {
    const result = parseHostHeaders({
      'Models.Example.com-headers': '{"Authorization":"Bearer x","X-Trace":"1"}',
      '127.0.0.1-headers': '{}',
      PATH: '/usr/bin',
      'unset-headers': undefined,
    });
    expect(result).toEqual(
      right(
        new Map([
          ['models.example.com', { Authorization: 'Bearer x', 'X-Trace': '1' }],
          ['127.0.0.1', {}],
        ]),
      ),
    );
  });

  it('gives an empty map when no variable names headers', () => {
    expect(parseHostHeaders({ HOME: '/root' })).toEqual(right(new Map()));
  });

  it.each([
    ['{not json', 'is not valid JSON'],
    ['["a"]', 'must be a JSON object'],
    ['"text"', 'must be a JSON object'],
    ['null', 'must be a JSON object'],
    ['{"X-Count":1}', 'the value of header X-Count must be a string'],
    ['{"bad name":"v"}', 'a header name is not an HTTP token'],
    ['{"X-A":"v\\r\\nX-B: injected"}', 'must not contain CR, LF or NUL'],
  ])('rejects %s naming the variable', (text, why) => {
    const problem = problemOf(text);
    expect(problem).toContain('example.com-headers');
    expect(problem).toContain(why);
  });

  it.each([
    ['a bare token', 'Bearer s3cr3t-token'],
    ['a cut object', '{"Authorization":"Bearer s3cr3t-token"'],
    ['a bad header name', '{"s3cr3t-token here":"v"}'],
    ['a bad header name with a value that is no string', '{"Bearer s3cr3t-token":1}'],
  ])('never quotes the value of a malformed variable (%s)', (_label, text) => {
    const problem = problemOf(text);
    expect(problem).toContain('example.com-headers');
    expect(problem).not.toContain('s3cr3t');
  });

  it('registers every header value as a secret, so no log line or message can show it', () => {
    parseHostHeaders({
      'example.com-headers': '{"X-Api-Key":"opaque-key-7","Authorization":"Token tkn-8888"}',
    });
    expect(redact('server echoed opaque-key-7 and tkn-8888 and Token tkn-8888')).toBe(
      'server echoed [REDACTED] and [REDACTED] and [REDACTED]',
    );
  });

  it('says an empty variable is empty', () => {
    expect(parseHostHeaders({ 'example.com-headers': ' ' })).toEqual(
      left('example.com-headers is empty: expected a JSON object of header names to string values'),
    );
  });

  it('rejects a variable that names no host', () => {
    expect(parseHostHeaders({ '-headers': '{}' })).toEqual(
      left('-headers does not name a host: use <hostname>-headers'),
    );
  });
});
