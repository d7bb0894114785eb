/** The TLS fixtures of test/fixtures/tls: a test CA, and a server certificate for 127.0.0.1 and localhost it signed. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A fixture file's text: `ca.pem`, `server.pem` or `server-key.pem`. */
export const tlsFixture = (name: 'ca.pem' | 'server.pem' | 'server-key.pem'): string =>
  readFileSync(join(__dirname, '..', 'fixtures', 'tls', name), 'utf8');

/** The server's key and certificate, as `startHttpServer`'s `tls` option takes them. */
export const serverTls = (): { readonly key: string; readonly cert: string } => ({
  key: tlsFixture('server-key.pem'),
  cert: tlsFixture('server.pem'),
});
