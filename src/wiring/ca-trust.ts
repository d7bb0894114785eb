/** CA trust beyond a Network's own: the CA files KServe's clients trust (SSL_CERT_FILE, python-requests', KServe's CA bundle ConfigMap), each where they trust it. */
import { statSync } from 'node:fs';
import * as E from 'fp-ts/Either';
import type { Logger } from 'pino';
import type { Env } from '../core/env';
import { kserveCaBundle } from '../core/kserve-storage-env';
import { readCaBundle, type Network } from '../net';

/** Whether `a` and `b` name one file (links followed); false when either is unset or cannot be looked at. */
const sameFile = (a: string, b: string | undefined): boolean => {
  if (b === undefined || b.trim() === '') return false;
  try {
    const [one, other] = [statSync(a), statSync(b.trim())];
    return one.dev === other.dev && one.ino === other.ino;
  } catch {
    return false;
  }
};

/**
 * `network` trusting the certificates of `file` too (on top of its own); a file that cannot be read leaves `network`,
 * with one warn line: `unread` says, from why, what that means. Best effort, as KServe's clients take these files.
 */
const trustingAlso = (
  network: Network,
  file: string | undefined,
  log: Logger,
  unread: (why: string) => string,
): Network => {
  if (file === undefined) return network;
  const certificates = readCaBundle(file);
  if (E.isRight(certificates)) return network.withTls({ extraCa: certificates.right });
  log.warn({ component: 'storage' }, unread(certificates.left));
  return network;
};

/**
 * `network` with the certificates of KServe's CA bundle ConfigMap (`kserveCaBundle`) trusted too, for the downloads
 * that are not S3's (S3 takes it as its AWS_CA_BUNDLE), as KServe's initializer trusts it for https, hf, GCS and Azure.
 * Best effort, as there: a bundle that cannot be read leaves the default roots, with one warn line naming the file.
 */
const withKserveCaBundle = (network: Network, env: Env, log: Logger): Network =>
  trustingAlso(
    network,
    kserveCaBundle(env),
    log,
    (why) =>
      `CA_BUNDLE_CONFIGMAP_NAME: ${why}: https://, gs://, hf:// and Azure downloads trust the default roots only`,
  );

/**
 * `network` with the CAs python-requests trusts (`REQUESTS_CA_BUNDLE`, else `CURL_CA_BUNDLE`), so KServe's storage
 * initializer for https, hf, GCS and Azure, and with KServe's CA bundle ConfigMap: for the downloads that are not S3's.
 * A file `network` trusts already (NODE_EXTRA_CA_CERTS', SSL_CERT_FILE's) is not read again: it would cost the heap.
 */
export const withRequestsCas = (network: Network, env: Env, log: Logger): Network => {
  const name = env.REQUESTS_CA_BUNDLE?.trim() ? 'REQUESTS_CA_BUNDLE' : 'CURL_CA_BUNDLE';
  const file = env[name]?.trim() || undefined;
  const known =
    file === undefined || [env.NODE_EXTRA_CA_CERTS, env.SSL_CERT_FILE].some((other) => sameFile(file, other));
  const requests = known
    ? network
    : trustingAlso(
        network,
        file,
        log,
        (why) => `${name}: ${why}: https://, gs://, hf:// and Azure downloads do not trust its CAs`,
      );
  return withKserveCaBundle(requests, env, log);
};

/**
 * `network` trusting `SSL_CERT_FILE` too, which KServe's agent (Go's system roots) and OpenSSL clients trust, and
 * Node reads only under --use-openssl-ca or --use-system-ca (never beside CAs of a client's own): for storage and the
 * model server. Node trusts NODE_EXTRA_CA_CERTS already (an environment often names one bundle in both): read again,
 * the same certificates would cost the heap ~0.6 MiB for nothing.
 */
export const withSslCertFile = (network: Network, env: Env, log: Logger): Network => {
  const sslCertFile = env.SSL_CERT_FILE?.trim() || undefined;
  return sslCertFile === undefined || sameFile(sslCertFile, env.NODE_EXTRA_CA_CERTS)
    ? network
    : trustingAlso(network, sslCertFile, log, (why) => `SSL_CERT_FILE: ${why}: its CAs are not trusted`);
};
