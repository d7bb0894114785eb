/**
 * The storage settings KServe hands its containers in forms of its own, made into the env names the storage
 * providers read: the `storage:` spec of an InferenceService (`STORAGE_CONFIG`, the JSON of a key of the
 * `storage-config` Secret, and `STORAGE_OVERRIDE_CONFIG`, its parameters), and the CA bundle ConfigMap the
 * webhook mounts (`CA_BUNDLE_CONFIGMAP_NAME`, `CA_BUNDLE_VOLUME_MOUNT_POINT`). Pure; as KServe's storage code does.
 */
import * as E from 'fp-ts/Either';
import type { Env } from './env';
import { parseJson } from './json/json';
import { isJsonObject } from './json/json-object';
import { hasUserInfo } from './redact';

/** A storage spec's S3 keys and the env var each sets (kserve_storage.py `_update_with_storage_spec`). */
const s3SpecKeys = [
  ['endpoint_url', 'AWS_ENDPOINT_URL'],
  ['access_key_id', 'AWS_ACCESS_KEY_ID'],
  ['secret_access_key', 'AWS_SECRET_ACCESS_KEY'],
  ['region', 'AWS_DEFAULT_REGION'],
  ['ca_bundle', 'AWS_CA_BUNDLE'],
  ['verify_ssl', 'S3_VERIFY_SSL'],
  ['anonymous', 'awsAnonymousCredential'],
] as const;

/** Where KServe's webhook mounts the CA bundle ConfigMap unless told otherwise, and the key it reads there. */
const defaultCaBundleMount = '/etc/ssl/custom-certs';
const caBundleKey = 'cabundle.crt';

/** An http(s) URL without user info: what an S3 endpoint must be. */
const isPlainHttpUrl = (text: string): boolean => {
  const url = URL.parse(text.trim());
  return url !== null && ['http:', 'https:'].includes(url.protocol) && !hasUserInfo(url);
};

/** The JSON object in env var `name` (absent or empty: none); the Left names the var, never its value (a secret). */
const objectIn = (env: Env, name: string): E.Either<string, Readonly<Record<string, unknown>>> => {
  const text = env[name];
  if (text === undefined || text.trim() === '') return E.right({});
  const parsed = parseJson(text);
  return E.isRight(parsed) && isJsonObject(parsed.right)
    ? E.right(parsed.right)
    : E.left(`${name} is not a JSON object`);
};

/**
 * `env` with KServe's storage spec and CA bundle taken in: an S3 spec's keys set `AWS_*`, `S3_VERIFY_SSL` and
 * `awsAnonymousCredential` (over what is there, as KServe's initializer does); a mounted CA bundle ConfigMap is
 * `AWS_CA_BUNDLE` unless that is set. The Left says which variable is malformed.
 */
export const kserveStorageEnv = (env: Env): E.Either<string, Env> => {
  const spec = objectIn(env, 'STORAGE_CONFIG');
  if (E.isLeft(spec)) return spec;
  const overrides = objectIn(env, 'STORAGE_OVERRIDE_CONFIG');
  if (E.isLeft(overrides)) return overrides;
  const merged = { ...spec.right, ...overrides.right };
  const taken: Record<string, string> = {};
  if (merged.type === 's3')
    for (const [key, name] of s3SpecKeys) {
      const value = merged[key];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'string' && typeof value !== 'boolean' && typeof value !== 'number')
        return E.left(`STORAGE_CONFIG: ${key} is not a string`);
      // Checked here, so that the message names the key the user wrote, not the AWS_ENDPOINT_URL it becomes.
      if (key === 'endpoint_url' && String(value).trim() !== '' && !isPlainHttpUrl(String(value)))
        return E.left(`STORAGE_CONFIG: ${key} must be an http:// or https:// URL without credentials`);
      taken[name] = String(value);
    }
  const mounted = kserveCaBundle(env);
  const caBundle =
    mounted !== undefined && !env.AWS_CA_BUNDLE && !taken.AWS_CA_BUNDLE ? { AWS_CA_BUNDLE: mounted } : {};
  return E.right({ ...env, ...taken, ...caBundle });
};

/**
 * The file of the CA bundle ConfigMap KServe's webhook mounts (`CA_BUNDLE_CONFIGMAP_NAME` set:
 * `$CA_BUNDLE_VOLUME_MOUNT_POINT/cabundle.crt`, default `/etc/ssl/custom-certs`), or undefined. KServe's initializer
 * trusts it for every download, on top of the default roots (kserve_storage.py `_configure_global_ca_bundle`), and
 * takes it as S3's `AWS_CA_BUNDLE` unless that is set (`_get_s3_client_kwargs`).
 */
export const kserveCaBundle = (env: Env): string | undefined =>
  env.CA_BUNDLE_CONFIGMAP_NAME?.trim()
    ? `${(env.CA_BUNDLE_VOLUME_MOUNT_POINT?.trim() || defaultCaBundleMount).replace(/\/+$/, '')}/${caBundleKey}`
    : undefined;
