/**
 * The world the issue #9 behaviour tests run the real CLI in: a config dir written as the kubelet does, a model
 * dir, file:// models under a storage root, and a V2 stand-in that can be restarted empty on its port.
 */
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { startV2ModelServer, type V2ModelServerStandIn } from '../../src/testing/v2-model-server';
import { type CliFlags } from '../helpers/cli-process';
import { writeFiles } from '../helpers/file-tree';
import { modelsJson } from '../helpers/fixtures';
import type { LogLine } from '../helpers/log-sink';

/** A running world; `close` stops the stand-in (the temp dir is the caller's). */
export interface ResyncWorld {
  readonly configDir: string;
  readonly modelDir: string;
  readonly storageDir: string;
  /** The stand-in answering now (a new one after `restartServerEmpty`). */
  readonly server: () => V2ModelServerStandIn;
  /** Writes models.json listing `names`, each a file:// model under the storage dir (made by `addModel`). */
  writeConfig(names: ReadonlyArray<string>): void;
  /** Writes a small model `name` into the storage dir. */
  addModel(name: string, bytes?: number): Promise<void>;
  /** Stops the stand-in and starts an empty one on the same port, as a model server restarting does. */
  restartServerEmpty(): Promise<void>;
  /** The CLI flags of this world, with fast retries and `extra` on top. */
  flags(extra?: CliFlags): CliFlags;
  close(): Promise<void>;
}

/** A world in `root` (an empty temp dir); `modelDir` overrides where the models go (a tmpfs, say). */
export const resyncWorld = async (root: string, modelDir = join(root, 'models')): Promise<ResyncWorld> => {
  const configDir = join(root, 'configs');
  const storageDir = join(root, 'storage');
  let server = await startV2ModelServer({ modelDir });
  const port = Number(new URL(server.url).port);
  return {
    configDir,
    modelDir,
    storageDir,
    server: () => server,
    writeConfig: (names) =>
      atomicWrite(configDir, {
        'models.json': modelsJson(Object.fromEntries(names.map((name) => [name, join(storageDir, name)]))),
      }),
    addModel: (name, bytes = 16) => writeFiles(join(storageDir, name), { 'model.bin': 'x'.repeat(bytes) }),
    restartServerEmpty: async () => {
      await server.close();
      server = await startV2ModelServer({ modelDir, port });
    },
    flags: (extra = {}) => ({
      'config-dir': configDir,
      'model-dir': modelDir,
      'server-url': server.url,
      'local-storage-roots': storageDir,
      'retry-base-ms': 20,
      'retry-max-ms': 100,
      'log-format': 'json',
      ...extra,
    }),
    close: () => server.close(),
  };
};

/** Matches the log line `msg` about `model`. */
export const about =
  (msg: string, model: string) =>
  (log: LogLine): boolean =>
    log.msg === msg && log['model'] === model;

/** The keys of a JSON object's top level, in order, repeats kept (JSON.parse keeps only the last of a repeat). */
export const topLevelKeys = (line: string): string[] => {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (char === '"') {
      let end = i + 1;
      while (line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (depth === 1 && line[end + 1] === ':') keys.push(JSON.parse(line.slice(i, end + 1)) as string);
      i = end;
    } else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') depth--;
  }
  return keys;
};

/** The stderr lines that hold a top-level key twice. */
export const linesWithDuplicateKeys = (lines: ReadonlyArray<string>): string[] =>
  lines.filter((line) => {
    const keys = topLevelKeys(line);
    return new Set(keys).size !== keys.length;
  });
