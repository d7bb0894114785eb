/** KServe's storage spec and CA bundle env, as its CredentialBuilder and webhook write them, made into AWS_* names. */
import * as E from 'fp-ts/Either';
import { kserveStorageEnv } from '../../src/core/kserve-storage-env';
import type { Env } from '../../src/core/env';

const mapped = (env: Env): Env => {
  const result = kserveStorageEnv(env);
  if (E.isLeft(result)) throw new Error(result.left);
  return result.right;
};

describe('kserveStorageEnv', () => {
  it("takes an S3 storage spec's keys, the override parameters over the secret's", () => {
    const env = mapped({
      // The storage-config Secret's key, as KServe's storage-spec docs show it, and the ISVC's parameters.
      STORAGE_CONFIG: JSON.stringify({
        type: 's3',
        access_key_id: 'minio',
        secret_access_key: 'minio123',
        endpoint_url: 'http://minio-service.kubeflow:9000',
        bucket: 'test-bucket',
        region: 'us-south',
      }),
      STORAGE_OVERRIDE_CONFIG: JSON.stringify({
        type: 's3',
        bucket: 'other',
        region: 'eu-de',
        verify_ssl: '0',
      }),
      AWS_ACCESS_KEY_ID: 'from-the-service-account',
    });
    expect(env).toMatchObject({
      AWS_ENDPOINT_URL: 'http://minio-service.kubeflow:9000',
      AWS_ACCESS_KEY_ID: 'minio',
      AWS_SECRET_ACCESS_KEY: 'minio123',
      AWS_DEFAULT_REGION: 'eu-de',
      S3_VERIFY_SSL: '0',
    });
  });

  it('leaves env alone without a spec, or with a spec of another type', () => {
    const env = { AWS_ACCESS_KEY_ID: 'a' };
    expect(mapped(env)).toEqual(env);
    expect(mapped({ ...env, STORAGE_CONFIG: '{"type":"hdfs","access_key_id":"x"}' })).toEqual({
      ...env,
      STORAGE_CONFIG: '{"type":"hdfs","access_key_id":"x"}',
    });
  });

  it('takes the CA bundle ConfigMap KServe mounts as AWS_CA_BUNDLE unless one is given', () => {
    expect(mapped({ CA_BUNDLE_CONFIGMAP_NAME: 'global-ca-bundle' }).AWS_CA_BUNDLE).toBe(
      '/etc/ssl/custom-certs/cabundle.crt',
    );
    expect(
      mapped({ CA_BUNDLE_CONFIGMAP_NAME: 'ca', CA_BUNDLE_VOLUME_MOUNT_POINT: '/certs/' }).AWS_CA_BUNDLE,
    ).toBe('/certs/cabundle.crt');
    expect(mapped({ CA_BUNDLE_CONFIGMAP_NAME: 'ca', AWS_CA_BUNDLE: '/mine.pem' }).AWS_CA_BUNDLE).toBe(
      '/mine.pem',
    );
  });

  it('names a malformed variable without quoting it', () => {
    expect(kserveStorageEnv({ STORAGE_CONFIG: '{"secret_access_key": "s3cr3t"' })).toEqual(
      E.left('STORAGE_CONFIG is not a JSON object'),
    );
    expect(kserveStorageEnv({ STORAGE_OVERRIDE_CONFIG: '[1]' })).toEqual(
      E.left('STORAGE_OVERRIDE_CONFIG is not a JSON object'),
    );
    expect(kserveStorageEnv({ STORAGE_CONFIG: '{"type":"s3","region":{"a":1}}' })).toEqual(
      E.left('STORAGE_CONFIG: region is not a string'),
    );
    // Named as the user wrote it: AWS_ENDPOINT_URL, which the spec sets, is not in their pod spec.
    for (const endpoint of [
      'minio-service.kubeflow:9000',
      'http://[bad',
      'http://minio:pw-secret@minio:9000',
    ])
      expect(
        kserveStorageEnv({ STORAGE_CONFIG: JSON.stringify({ type: 's3', endpoint_url: endpoint }) }),
      ).toEqual(
        E.left('STORAGE_CONFIG: endpoint_url must be an http:// or https:// URL without credentials'),
      );
    // Blank, as KServe leaves it to boto: no endpoint (AWS).
    expect(mapped({ STORAGE_CONFIG: '{"type":"s3","endpoint_url":""}' }).AWS_ENDPOINT_URL).toBe('');
  });
});
