/** An archive bench: the production model store and storage router on a temp dir, archives served from a local root and over HTTP. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { either as E } from 'fp-ts';
import pino from 'pino';
import { defaultAppConfig, type AppConfig } from '../../../src/core/flags/app-config';
import { EffectError } from '../../../src/core/errors';
import type { ModelStore, WrittenFiles } from '../../../src/ports';
import { capabilities } from '../../../src/wiring/capabilities';
import { startHttpServer, type RunningHttpServer } from '../../../src/testing/http-server';
import { name, spec } from '../../helpers/fixtures';
import { listTree } from '../../helpers/file-tree';
import { removeTempDir, tempDir } from '../../helpers/temp-dir';
import { install } from '../../helpers/install';

/** Where an archive is read from: a file under the local storage root, or an HTTP server. */
export type Provider = 'local' | 'http';

/** The bench of one test file. */
export interface ArchiveBench {
  /** `<root>/models`: the model dir. */
  readonly modelDir: string;
  /** `<root>/outside`: a dir beside the model dir that hostile entries aim at; nothing may land in it. */
  readonly outside: string;
  /** Stores `bytes` as `file` under the local root and on the server; the storageUri for `provider`. */
  place(provider: Provider, file: string, bytes: Buffer): Promise<string>;
  /** Installs a model from `uri` through the real store: undefined when it was installed, else its EffectError. */
  install(uri: string): Promise<EffectError | undefined>;
  /**
   * Everything under the root but the sources: `['models/', 'outside/']` when a failed download left nothing (no
   * staging dir, no file outside), plus the model's dir after an install.
   */
  leftovers(): Promise<string[]>;
  /** Deletes the installed model, so the next install starts from an empty model dir. */
  clear(): Promise<void>;
}

/**
 * A bench for a test file, set up once (beforeAll) with the flags' defaults overridden by `config`: its model
 * store and download function are the ones `capabilities` builds for the CLI.
 */
export const useArchiveBench = (config: Partial<AppConfig> = {}): ArchiveBench => {
  let root = '';
  let server: RunningHttpServer | undefined;
  let store: ModelStore | undefined;
  let download: ((uri: string, dir: string, signal: AbortSignal) => Promise<WrittenFiles | void>) | undefined;
  const served = new Map<string, Buffer>();
  const never = new AbortController().signal;
  const model = name('m');

  beforeAll(async () => {
    root = await tempDir('hostile-archives');
    await Promise.all(['models', 'outside', 'pvc'].map((dir) => mkdir(path.join(root, dir))));
    server = await startHttpServer((req, res) => {
      const body = served.get(new URL(req.url ?? '/', 'http://x').pathname.slice(1));
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    const built = capabilities(
      {
        ...defaultAppConfig,
        modelDir: path.join(root, 'models'),
        localStorageRoots: [path.join(root, 'pvc')],
        ...config,
      },
      pino({ level: 'silent' }),
      {},
    );
    if (E.isLeft(built)) throw new Error(built.left);
    ({ store, download } = built.right);
  });
  afterAll(async () => {
    await server?.close();
    await removeTempDir(root);
  });

  return {
    get modelDir() {
      return path.join(root, 'models');
    },
    get outside() {
      return path.join(root, 'outside');
    },
    place: async (provider, file, bytes) => {
      await writeFile(path.join(root, 'pvc', file), bytes);
      served.set(file, bytes);
      return provider === 'local' ? path.join(root, 'pvc', file) : `${server!.url}/${file}`;
    },
    install: (uri) =>
      install(store!, model, spec(uri), (dir, signal) => download!(uri, dir, signal), never).then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof EffectError) return error;
          throw error;
        },
      ),
    leftovers: async () => (await listTree(root)).filter((entry) => !entry.startsWith('pvc/')),
    clear: () => store!.remove(model),
  };
};
