/** s3SettingsFrom: how S3 is reached, from our choices first and then the environment names KServe uses (no I/O). */
import type { Env } from '../../core/env';
import * as E from 'fp-ts/Either';
import { switchValue, switchWords } from '../../core/switch-words';
import type { S3Addressing } from '../../core/storage-choices';
import { hasUserInfo } from '../../core/redact';

/** What was chosen for S3 before KServe's names are read (in the CLI: the `--s3-*` flags). */
export interface S3Choices {
  readonly s3Endpoint?: string | undefined;
  readonly s3Region?: string | undefined;
  readonly s3Addressing: S3Addressing;
  readonly s3Anonymous: boolean;
}

/** Where S3 is and how requests to it are made, before credentials and agents. */
export interface S3Settings {
  /** A custom endpoint (`http://minio:9000`); absent: AWS, by region. */
  readonly endpoint?: string;
  readonly region: string;
  /** How buckets are addressed: `auto` is path-style for a custom endpoint (MinIO, Ceph), virtual-hosted for AWS. */
  readonly addressing: S3Addressing;
  readonly anonymous: boolean;
  /** S3 Transfer Acceleration endpoints (KServe's `S3_USE_ACCELERATE`). */
  readonly useAccelerate: boolean;
  /** false: any server certificate is accepted (KServe's `S3_VERIFY_SSL=0`). */
  readonly verifyTls: boolean;
  /** A PEM file of CAs trusted for S3 on top of the others (`AWS_CA_BUNDLE`). */
  readonly caBundle?: string;
}

/** The value of `name` in `env`, trimmed; undefined when unset or blank. */
const read = (env: Env, name: string): string | undefined => env[name]?.trim() || undefined;

/** true / false for the words a switch takes (`true`, `1`, `yes`, `on`; `false`, `0`, `no`, `off`), else undefined. */
const truth = (env: Env, name: string): boolean | undefined => {
  const value = read(env, name);
  return value === undefined ? undefined : switchValue(value);
};

/**
 * The endpoint: `--s3-endpoint`, else `AWS_ENDPOINT_URL`, else KServe's `S3_ENDPOINT` (a host[:port], made https
 * unless `S3_USE_HTTPS` is 0/false; a full URL is taken as it is). The Left names the variable, not its value.
 */
const endpointOf = (flag: string | undefined, env: Env): E.Either<string, string | undefined> => {
  if (flag !== undefined) return E.right(flag);
  const name = read(env, 'AWS_ENDPOINT_URL') !== undefined ? 'AWS_ENDPOINT_URL' : 'S3_ENDPOINT';
  const given = read(env, name);
  if (given === undefined) return E.right(undefined);
  const scheme = truth(env, 'S3_USE_HTTPS') === false ? 'http' : 'https';
  const value =
    name === 'S3_ENDPOINT' && !/^[a-z][a-z\d+.-]*:\/\//i.test(given) ? `${scheme}://${given}` : given;
  const url = URL.parse(value);
  if (url === null) return E.left(`${name} is not a URL`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return E.left(`${name} must be an http:// or https:// URL`);
  if (hasUserInfo(url)) return E.left(`${name} must not carry credentials`);
  return E.right(value);
};

/**
 * Whether `endpoint` is AWS's legacy global endpoint (`https://s3.amazonaws.com`, as KServe's docs set
 * `serving.kserve.io/s3-endpoint: s3.amazonaws.com`) and one of `regions` is not the one it serves: there a
 * path-style request for the bucket answers 301 PermanentRedirect, which no region redirect follows (the host
 * stays), while the bucket's own host name (`bucket.s3.amazonaws.com`) reaches its region. KServe's initializer
 * turns to virtual addressing then (kserve_storage.py `get_S3_config`, on its AWS_DEFAULT_REGION).
 */
const globalEndpointElsewhere = (
  endpoint: string | undefined,
  regions: ReadonlyArray<string | undefined>,
): boolean => {
  const url = endpoint === undefined ? null : URL.parse(endpoint);
  return (
    url !== null &&
    url.protocol === 'https:' &&
    url.host === 's3.amazonaws.com' &&
    url.pathname === '/' &&
    regions.some((region) => region !== undefined && region !== 'us-east-1')
  );
};

/**
 * The S3 settings of `config` and `env`: each of our flags wins over KServe's name for the same thing, which wins
 * over the default (the table: docs/storage.md, S3 "Settings"). The Left says which setting is wrong.
 */
export const s3SettingsFrom = (config: S3Choices, env: Env): E.Either<string, S3Settings> => {
  const endpoint = endpointOf(config.s3Endpoint, env);
  if (E.isLeft(endpoint)) return endpoint;
  // AWS_DEFAULT_REGION first, as KServe's initializer (botocore reads no other) and agent (utils.go) sign for it:
  // KServe's webhook names the bucket's region so, while IRSA's may add the cluster's as AWS_REGION.
  const region = config.s3Region ?? read(env, 'AWS_DEFAULT_REGION') ?? read(env, 'AWS_REGION') ?? 'us-east-1';
  const verifyTls = truth(env, 'S3_VERIFY_SSL');
  // KServe reads only `0`/`false` as off and the rest as on; a word that is no switch is refused rather than guessed.
  if (verifyTls === undefined && read(env, 'S3_VERIFY_SSL') !== undefined)
    return E.left(
      `S3_VERIFY_SSL must be one of ${switchWords.on.join(', ')} (checks on) or ${switchWords.off.filter((word) => word !== '').join(', ')} (checks off)`,
    );
  const virtualBucket = truth(env, 'S3_USER_VIRTUAL_BUCKET');
  const elsewhere = globalEndpointElsewhere(endpoint.right, [region, read(env, 'AWS_DEFAULT_REGION')]);
  const fromEnv = elsewhere || virtualBucket === true ? 'virtual' : virtualBucket === false ? 'path' : 'auto';
  const addressing: S3Addressing = config.s3Addressing !== 'auto' ? config.s3Addressing : fromEnv;
  const caBundle = read(env, 'AWS_CA_BUNDLE');
  return E.right({
    ...(endpoint.right !== undefined ? { endpoint: endpoint.right } : {}),
    region,
    addressing,
    anonymous: config.s3Anonymous || truth(env, 'awsAnonymousCredential') === true,
    useAccelerate: truth(env, 'S3_USE_ACCELERATE') === true,
    verifyTls: verifyTls !== false,
    ...(caBundle !== undefined ? { caBundle } : {}),
  });
};
