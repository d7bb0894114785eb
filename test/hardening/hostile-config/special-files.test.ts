/** Hostile config, in-process: models.json or ..data as something other than a regular file, each one line. */
import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { removeAllKeys } from '../../../src/testing/atomic-writer';
import { removeTempDir, tempDir } from '../../helpers/temp-dir';
import {
  plainModelsJson,
  removePlainModelsJson,
  repointDataLink,
  useHostileAgent,
  type BadConfig,
} from './hostile-agent';

const hostile = useHostileAgent();
const servers: Server[] = [];
let elsewhere = '';
beforeAll(async () => {
  elsewhere = await tempDir('hostile-elsewhere');
  await writeFile(join(elsewhere, 'models.json'), '[]');
});
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await removeTempDir(elsewhere);
});

const listen = (path: string): Promise<void> => {
  const server = createServer();
  servers.push(server);
  return new Promise((resolve) => server.listen(path, resolve));
};

const special: BadConfig[] = [
  {
    kind: 'a FIFO (which blocked the old watcher forever)',
    apply: plainModelsJson((path) => Promise.resolve(void execFileSync('mkfifo', [path]))),
    says: 'it is a FIFO (named pipe), not a regular file; modelsync reads only regular files',
    tidy: removePlainModelsJson,
  },
  {
    kind: 'a socket',
    apply: plainModelsJson(listen),
    says: 'it is a socket, not a regular file; modelsync reads only regular files',
    tidy: removePlainModelsJson,
  },
  {
    kind: 'a directory',
    apply: plainModelsJson((path) => mkdir(path).then(() => undefined)),
    says: 'it is a directory, not a regular file',
    tidy: removePlainModelsJson,
  },
  {
    kind: 'a link to a character device',
    apply: plainModelsJson((path) => symlink('/dev/zero', path)),
    says: 'it is a character device, not a regular file',
    tidy: removePlainModelsJson,
  },
  {
    kind: 'a dangling link',
    apply: plainModelsJson((path) => symlink('gone.json', path)),
    says: 'models.json: it is a link to gone.json, which does not exist',
    tidy: removePlainModelsJson,
  },
  {
    kind: 'a dangling ..data',
    apply: (configDir) => repointDataLink(configDir, '..2026_01_01_00_00_00.000000001'),
    says: '..data is a link to ..2026_01_01_00_00_00.000000001, which does not exist',
  },
  {
    kind: 'a ..data that leads outside the config dir',
    apply: (configDir) => repointDataLink(configDir, elsewhere),
    says: `..data leads to ${'ELSEWHERE'}, not to a version dir beside it in the config dir; it is not read`,
  },
  {
    kind: 'a ConfigMap that lost its models.json key',
    apply: (configDir) => void removeAllKeys(configDir),
    says: 'models.json: it does not exist',
  },
];

describe('hostile config: special files', () => {
  it.each(special.map((bad) => [bad.kind, bad] as const))(
    'refuses models.json as %s with one line and keeps the models',
    async (_, bad) => {
      await hostile.agent.rejects({ ...bad, says: bad.says.replace('ELSEWHERE', elsewhere) });
    },
  );
});
