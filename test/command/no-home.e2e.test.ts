/**
 * The process run as a uid the image does not list, without HOME (OpenShift's random uid, a runtime that sets no
 * HOME): Node's `os.homedir()` throws there, and the AWS SDK calls it for its config files at every request.
 */
import { join } from 'node:path';
import { killAllCli, runCli } from '../helpers/cli-process';
import { readFiles } from '../helpers/file-tree';
import { startS3Server, type S3Server } from '../helpers/s3-server';
import { useTempDir } from '../helpers/temp-dir';

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('no-home');
let s3: S3Server;
beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket('models');
}, 60_000);
afterAll(() => s3.close());

/** A user namespace where the process is uid 1000770000 (in no password database), gid 0, and HOME is unset. */
const unlistedUserWithoutHome = ['unshare', '--map-user=1000770000', '--map-group=0', 'env', '-u', 'HOME'];

describe('modelsync as a uid with no home', () => {
  it('downloads an s3:// model as a uid with no password entry and no HOME', async () => {
    await s3.put('models', { 'iris/model.joblib': 'joblib' });
    const dest = join(tmp.path, 'models');

    const result = await runCli(['s3://models/iris', dest], {
      within: unlistedUserWithoutHome,
      env: {
        AWS_ACCESS_KEY_ID: s3.keys.accessKeyId,
        AWS_SECRET_ACCESS_KEY: s3.keys.secretAccessKey,
        AWS_ENDPOINT_URL: s3.url,
        AWS_DEFAULT_REGION: 'us-east-1',
      },
      timeoutMs: 30_000,
    });

    expect({
      code: result.code,
      errors: result.stderr.lines.filter((line) => line.includes('"error"')),
    }).toEqual({ code: 0, errors: [] });
    expect(await readFiles(dest)).toEqual({ 'model.joblib': 'joblib' });
  }, 40_000);
});
