/** Tests of the S3 block of the production wiring: KServe's TLS names and bad S3 settings stop the start with a clear message. */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import * as E from 'fp-ts/Either';
import pino from 'pino';
import { defaultAppConfig } from '../../../src/core/flags/app-config';
import { capabilities } from '../../../src/wiring/capabilities';
import { LogSink } from '../../helpers/log-sink';
import { useTempDir } from '../../helpers/temp-dir';

const dir = useTempDir('s3-production');

const build = (env: Record<string, string>) => {
  const sink = new LogSink();
  const built = capabilities({ ...defaultAppConfig, modelDir: dir.path }, pino(sink), env);
  return { built, sink };
};

describe('production S3 settings', () => {
  it('starts with an AWS_CA_BUNDLE of PEM certificates', async () => {
    const bundle = path.join(dir.path, 'ca.pem');
    await writeFile(bundle, rootCertificates.slice(0, 2).join('\n'));
    expect(E.isRight(build({ AWS_CA_BUNDLE: bundle }).built)).toBe(true);
  });

  it('refuses to start on an AWS_CA_BUNDLE it cannot read or that holds no certificate, naming the file', async () => {
    const missing = path.join(dir.path, 'missing.pem');
    expect(build({ AWS_CA_BUNDLE: missing }).built).toEqual(
      E.left(`invalid S3 settings: AWS_CA_BUNDLE: cannot read the CA bundle ${missing}: ENOENT`),
    );
    const notPem = path.join(dir.path, 'not.pem');
    await writeFile(notPem, 'hello');
    expect(build({ AWS_CA_BUNDLE: notPem }).built).toEqual(
      E.left(`invalid S3 settings: AWS_CA_BUNDLE: the CA bundle ${notPem} holds no PEM certificate`),
    );
  });

  // kserve_storage.py looks for the bundle only while certificates are checked: with S3_VERIFY_SSL=0 an absent
  // AWS_CA_BUNDLE (a global s3CABundle whose ConfigMap is not mounted) stopped every model, hf:// and gs:// too.
  it('reads no AWS_CA_BUNDLE when S3_VERIFY_SSL turns certificate checks off', () => {
    const missing = path.join(dir.path, 'missing.pem');
    expect(E.isRight(build({ AWS_CA_BUNDLE: missing, S3_VERIFY_SSL: '0' }).built)).toBe(true);
  });

  it('warns once at start when S3_VERIFY_SSL turns certificate checks off', () => {
    const { built, sink } = build({ S3_VERIFY_SSL: '0' });
    expect(E.isRight(built)).toBe(true);
    expect(sink.withMessage('S3_VERIFY_SSL is off')).toHaveLength(1);
    expect(build({}).sink.lines).toEqual([]);
  });

  it('refuses to start on an S3 endpoint variable that is no URL, without quoting it', () => {
    const { built } = build({ AWS_ENDPOINT_URL: 'http://user:pw-secret@[bad' });
    expect(built).toEqual(E.left('invalid S3 settings: AWS_ENDPOINT_URL is not a URL'));
  });
});
