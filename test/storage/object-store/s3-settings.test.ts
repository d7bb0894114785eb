/** Tests of s3SettingsFrom: our flags first, then KServe's environment names, then the defaults. */
import * as E from 'fp-ts/Either';
import { defaultAppConfig, type AppConfig } from '../../../src/core/flags/app-config';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { s3SdkClient } from '../../../src/storage/object-store/s3';
import { s3SettingsFrom } from '../../../src/storage/object-store/s3-settings';

const settings = (config: Partial<AppConfig>, env: Record<string, string> = {}) =>
  s3SettingsFrom({ ...defaultAppConfig, ...config }, env);

const right = (config: Partial<AppConfig>, env: Record<string, string> = {}) => {
  const result = settings(config, env);
  if (E.isLeft(result)) throw new Error(result.left);
  return result.right;
};

describe('s3SettingsFrom', () => {
  it('defaults to AWS in us-east-1, signed, auto addressing, certificates verified', () => {
    expect(right({})).toEqual({
      region: 'us-east-1',
      addressing: 'auto',
      anonymous: false,
      useAccelerate: false,
      verifyTls: true,
    });
  });

  it('takes the endpoint from --s3-endpoint, else AWS_ENDPOINT_URL, else S3_ENDPOINT (https unless S3_USE_HTTPS=0)', () => {
    const env = { AWS_ENDPOINT_URL: 'http://minio.kubeflow:9000', S3_ENDPOINT: 'ceph:7480' };
    expect(right({ s3Endpoint: 'http://flag:9000' }, env).endpoint).toBe('http://flag:9000');
    expect(right({}, env).endpoint).toBe('http://minio.kubeflow:9000');
    expect(right({}, { S3_ENDPOINT: 'ceph:7480' }).endpoint).toBe('https://ceph:7480');
    expect(right({}, { S3_ENDPOINT: 'ceph:7480', S3_USE_HTTPS: '0' }).endpoint).toBe('http://ceph:7480');
    expect(right({}, { S3_ENDPOINT: 'http://ceph:7480', S3_USE_HTTPS: '1' }).endpoint).toBe(
      'http://ceph:7480',
    );
  });

  it('refuses an endpoint variable that is no http(s) URL or carries credentials, naming it but not its value', () => {
    expect(settings({}, { AWS_ENDPOINT_URL: 'not a url' })).toEqual(E.left('AWS_ENDPOINT_URL is not a URL'));
    expect(settings({}, { AWS_ENDPOINT_URL: 'ftp://x' })).toEqual(
      E.left('AWS_ENDPOINT_URL must be an http:// or https:// URL'),
    );
    expect(settings({}, { S3_ENDPOINT: 'https://user:hunter22@minio:9000' })).toEqual(
      E.left('S3_ENDPOINT must not carry credentials'),
    );
  });

  // KServe names the bucket's region AWS_DEFAULT_REGION (its s3-region annotation, a storage spec's region), and both
  // its initializer (botocore) and its agent (utils.go) sign for it; IRSA's webhook may add the cluster's as
  // AWS_REGION beside it, which signed for the wrong region (400 AuthorizationHeaderMalformed at the global endpoint).
  it('takes the region from --s3-region, else AWS_DEFAULT_REGION, else AWS_REGION', () => {
    const env = { AWS_REGION: 'eu-west-1', AWS_DEFAULT_REGION: 'ap-south-1' };
    expect(right({ s3Region: 'us-west-2' }, env).region).toBe('us-west-2');
    expect(right({}, env).region).toBe('ap-south-1');
    expect(right({}, { AWS_DEFAULT_REGION: 'ap-south-1' }).region).toBe('ap-south-1');
    expect(right({}, { AWS_REGION: 'eu-west-1' }).region).toBe('eu-west-1');
  });

  it("lets --s3-addressing win, and KServe's S3_USER_VIRTUAL_BUCKET decide when it is auto", () => {
    expect(right({ s3Addressing: 'path' }, { S3_USER_VIRTUAL_BUCKET: 'true' }).addressing).toBe('path');
    expect(right({}, { S3_USER_VIRTUAL_BUCKET: 'true' }).addressing).toBe('virtual');
    expect(right({}, { S3_USER_VIRTUAL_BUCKET: 'false' }).addressing).toBe('path');
    expect(right({}, { S3_USER_VIRTUAL_BUCKET: 'maybe' }).addressing).toBe('auto');
  });

  // KServe's docs set `serving.kserve.io/s3-endpoint: s3.amazonaws.com` with `s3-region: us-east-2`; path-style at that
  // global endpoint answers 301 PermanentRedirect for a bucket outside us-east-1 (kserve_storage.py get_S3_config).
  it("addresses buckets virtual-hosted at AWS's global endpoint for a region other than us-east-1, as KServe does", () => {
    const global = { AWS_ENDPOINT_URL: 'https://s3.amazonaws.com', AWS_DEFAULT_REGION: 'us-east-2' };
    expect(right({}, global).addressing).toBe('virtual');
    expect(right({}, { ...global, S3_USER_VIRTUAL_BUCKET: 'false' }).addressing).toBe('virtual');
    expect(right({}, { S3_ENDPOINT: 's3.amazonaws.com', AWS_REGION: 'eu-west-1' }).addressing).toBe(
      'virtual',
    );
    expect(right({ s3Endpoint: 'https://s3.amazonaws.com/', s3Region: 'ap-south-1' }).addressing).toBe(
      'virtual',
    );
    // us-east-1 is where that endpoint is: path-style works there. Our flag still wins.
    expect(right({}, { ...global, AWS_DEFAULT_REGION: 'us-east-1' }).addressing).toBe('auto');
    expect(right({}, { AWS_ENDPOINT_URL: 'https://s3.amazonaws.com' }).addressing).toBe('auto');
    expect(right({ s3Addressing: 'path' }, global).addressing).toBe('path');
    // KServe names the bucket's region AWS_DEFAULT_REGION; IRSA's webhook adds the cluster's as AWS_REGION beside it.
    expect(right({}, { ...global, AWS_REGION: 'us-east-1' }).addressing).toBe('virtual');
    expect(right({}, { ...global, AWS_ENDPOINT_URL: 'http://minio.kubeflow:9000' }).addressing).toBe('auto');
  });

  it("sends those requests to the bucket's own host name at the global endpoint", async () => {
    const env = { AWS_ENDPOINT_URL: 'https://s3.amazonaws.com', AWS_DEFAULT_REGION: 'us-east-2' };
    const client = s3SdkClient({ ...right({}, env), credentials: 'anonymous', maxAttempts: 1 });
    let sentTo: { hostname?: string; path?: string } | undefined;
    client.middlewareStack.add(
      () => (args) => {
        sentTo = args.request as { hostname?: string; path?: string };
        return Promise.reject(new Error('not sent'));
      },
      { step: 'finalizeRequest', priority: 'low' },
    );
    await expect(client.send(new ListObjectsV2Command({ Bucket: 'models', Prefix: 'm1/' }))).rejects.toThrow(
      'not sent',
    );
    expect(sentTo).toMatchObject({ hostname: 'models.s3.amazonaws.com', path: '/' });
  });

  it('goes anonymous on --s3-anonymous or awsAnonymousCredential=true', () => {
    expect(right({ s3Anonymous: true }).anonymous).toBe(true);
    expect(right({}, { awsAnonymousCredential: 'True' }).anonymous).toBe(true);
    expect(right({}, { awsAnonymousCredential: 'false' }).anonymous).toBe(false);
  });

  it('reads S3_VERIFY_SSL, AWS_CA_BUNDLE and S3_USE_ACCELERATE', () => {
    const env = { S3_VERIFY_SSL: '0', AWS_CA_BUNDLE: '/etc/ssl/s3.pem', S3_USE_ACCELERATE: 'true' };
    expect(right({}, env)).toMatchObject({
      verifyTls: false,
      caBundle: '/etc/ssl/s3.pem',
      useAccelerate: true,
    });
    expect(right({}, { S3_VERIFY_SSL: 'true' }).verifyTls).toBe(true);
  });

  // KServe turns checks off on `0` and `false` (any case), on for the rest; ours takes every switch word (`no`, `off`
  // too: they say off, which KServe would have read as on), and refuses a value that is none, naming the variable:
  // `S3_VERIFY_SSL=disabled` checked certificates while the user meant not to, with nothing said.
  it('reads S3_VERIFY_SSL as a switch and refuses a value that is none, naming the variable', () => {
    for (const off of ['0', 'false', 'False', 'no', 'OFF'])
      expect(right({}, { S3_VERIFY_SSL: off }).verifyTls).toBe(false);
    for (const on of ['1', 'true', 'TRUE', 'yes', 'on', ' '])
      expect(right({}, { S3_VERIFY_SSL: on }).verifyTls).toBe(true);
    expect(settings({}, { S3_VERIFY_SSL: 'disabled' })).toEqual(
      E.left('S3_VERIFY_SSL must be one of true, 1, yes, on (checks on) or false, 0, no, off (checks off)'),
    );
  });
});
