/** Tests of the S3 block of the production wiring: KServe's TLS names and bad S3 settings stop the start with a clear message. */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import * as E from 'fp-ts/Either';
import pino from 'pino';
import { defaultAppConfig } from '../../../src/core/flags/app-config';
import { redact } from '../../../src/core/redact';
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

  // KServe's initializer fails only the S3 downloads that need the bundle (kserve_storage.py raises in
  // _get_s3_client_kwargs): a global s3CABundle whose cabundle.crt is missing stopped every model, hf:// too.
  it('starts on an AWS_CA_BUNDLE it cannot read or that holds no certificate, failing only s3:// downloads, naming the file', async () => {
    const missing = path.join(dir.path, 'missing.pem');
    const notPem = path.join(dir.path, 'not.pem');
    await writeFile(notPem, 'hello');
    for (const [bundle, reason] of [
      [missing, `cannot read the CA bundle ${missing}: ENOENT`],
      [notPem, `the CA bundle ${notPem} holds no PEM certificate`],
    ] as const) {
      const { built, sink } = build({ AWS_CA_BUNDLE: bundle });
      expect(sink.withMessage(`AWS_CA_BUNDLE: ${reason}`)).toHaveLength(1);
      if (E.isLeft(built)) throw new Error(built.left);
      const target = path.join(dir.path, 'target');
      await mkdir(target, { recursive: true });
      const failure = built.right.download('s3://bucket/model', target, new AbortController().signal);
      await expect(failure).rejects.toMatchObject({
        message: `s3://bucket/model: AWS_CA_BUNDLE: ${reason}`,
        retryable: true,
      });
      // Other schemes are untouched: a local model still downloads.
      const local = path.join(dir.path, 'local');
      await mkdir(local, { recursive: true });
      await writeFile(path.join(local, 'model.bin'), 'weights');
      const localBuilt = capabilities(
        { ...defaultAppConfig, modelDir: dir.path, localStorageRoots: [dir.path] },
        pino(new LogSink()),
        { AWS_CA_BUNDLE: bundle },
      );
      if (E.isLeft(localBuilt)) throw new Error(localBuilt.left);
      const localTarget = path.join(dir.path, 'local-target');
      await rm(localTarget, { recursive: true, force: true });
      await mkdir(localTarget);
      await localBuilt.right.download(local, localTarget, new AbortController().signal);
      expect(await readFile(path.join(localTarget, 'model.bin'), 'utf8')).toBe('weights');
    }
  });

  it('reads the AWS_CA_BUNDLE again at each s3:// download: a bundle mounted later is used', async () => {
    const later = path.join(dir.path, 'later.pem');
    const { built } = build({ AWS_CA_BUNDLE: later, AWS_ENDPOINT_URL: 'http://127.0.0.1:9' });
    if (E.isLeft(built)) throw new Error(built.left);
    const target = path.join(dir.path, 'target-later');
    await mkdir(target, { recursive: true });
    await expect(
      built.right.download('s3://bucket/model', target, new AbortController().signal),
    ).rejects.toThrow(`AWS_CA_BUNDLE: cannot read the CA bundle ${later}`);
    await writeFile(later, rootCertificates.slice(0, 2).join('\n'));
    // Now the bundle is read and the store is asked (nothing listens there: a connection failure, not the bundle).
    const failure = await built.right
      .download('s3://bucket/model', target, new AbortController().signal)
      .then(
        () => undefined,
        (cause: unknown) => cause,
      );
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).not.toContain('AWS_CA_BUNDLE');
  });

  // Its network, which adds the bundle to Node's roots, is built then: held as strings they cost ~0.6 MiB of heap
  // from the start (P5 in docs/benchmarks.md), paid now only where an s3:// model is listed.
  it('reads a readable AWS_CA_BUNDLE again at the first s3:// download, and builds S3 with it then', async () => {
    const bundle = path.join(dir.path, 'ca.pem');
    await writeFile(bundle, rootCertificates.slice(0, 2).join('\n'));
    const { built, sink } = build({ AWS_CA_BUNDLE: bundle, AWS_ENDPOINT_URL: 'http://127.0.0.1:9' });
    if (E.isLeft(built)) throw new Error(built.left);
    expect(sink.lines.filter((line) => String(line.msg).includes('AWS_CA_BUNDLE'))).toEqual([]);
    await writeFile(bundle, 'not a certificate');
    const target = path.join(dir.path, 'target-first');
    await mkdir(target, { recursive: true });
    await expect(
      built.right.download('s3://bucket/model', target, new AbortController().signal),
    ).rejects.toThrow(`AWS_CA_BUNDLE: the CA bundle ${bundle}`);
  });

  // Node's os.homedir() throws when HOME is unset and the uid is not in /etc/passwd (as 65532 is not in the image's):
  // the AWS files' default paths and huggingface_hub's token file were looked up there at start, and the start died.
  it('starts without HOME for a uid with no home, the default files then looked for under ~ as written', () => {
    const noHome = jest.spyOn(os, 'homedir').mockImplementation(() => {
      throw new Error('A system error occurred: uv_os_homedir returned ENOENT (no such file or directory)');
    });
    try {
      expect(E.isRight(build({}).built)).toBe(true);
      expect(noHome).toHaveBeenCalled();
    } finally {
      noHome.mockRestore();
    }
  });

  it('registers the S3 keys as secrets at start while the AWS_CA_BUNDLE cannot be read', () => {
    const secret = 'wiring-secret-key-while-bundle-missing';
    const { built } = build({
      AWS_CA_BUNDLE: path.join(dir.path, 'absent.pem'),
      AWS_ACCESS_KEY_ID: 'AKIAWIRINGBUNDLE',
      AWS_SECRET_ACCESS_KEY: secret,
    });
    expect(E.isRight(built)).toBe(true);
    expect(redact(`a line quoting ${secret}`)).not.toContain(secret);
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
