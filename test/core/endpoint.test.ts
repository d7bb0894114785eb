/** Tests of the endpoint rule every credential is bound by: scheme, host and port, nothing folded but case and a trailing dot. */
import { endpointOf, hostKey, sameEndpoint } from '../../src/core/endpoint';

describe('sameEndpoint', () => {
  it.each([
    ['https://example.com/a', 'https://example.com:443/b?x=1', true],
    ['https://example.com/a', 'https://Example.COM./b', true],
    ['http://example.com/a', 'http://example.com:80/b', true],
    ['https://example.com/a', 'http://example.com/a', false],
    ['https://example.com/a', 'https://example.com:8443/a', false],
    ['http://127.0.0.1:9000/a', 'http://localhost:9000/a', false],
    ['https://example.com/a', 'https://api.example.com/a', false],
    ['https://example.com/a', 'https://example.com.evil.test/a', false],
    ['http://[::1]:80/a', 'http://[::1]/b', true],
    ['not a url', 'not a url', false],
  ])('says %s and %s are the same endpoint: %s', (a, b, same) => {
    expect(sameEndpoint(a, b)).toBe(same);
    expect(sameEndpoint(b, a)).toBe(same);
  });
});

describe('endpointOf', () => {
  it('gives the scheme, the host key and the effective port', () => {
    expect(endpointOf('HTTPS://Models.Example.com./m')).toEqual({
      scheme: 'https',
      host: 'models.example.com',
      port: 443,
    });
    expect(endpointOf('ftp://example.com/m')).toBeUndefined();
  });
});

describe('hostKey', () => {
  it('folds case and trailing dots only', () => {
    expect(hostKey('Example.COM.')).toBe('example.com');
    expect(hostKey('127.0.0.1')).toBe('127.0.0.1');
  });
});
