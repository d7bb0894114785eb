/** loadJournal: the LoadJournal port as one empty file per unconfirmed load in `<model dir>/.modelsync-loads/`. */
import { lstat, mkdir, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { errorCode, permanentError } from '../core/errors';
import { modelNameProblem, type ModelName } from '../core/model-name';
import type { LoadJournal } from '../ports';
import { fsError, isMissing, step, syncPath } from './durable-fs';

/** The journal's dir inside the model dir; its leading dot keeps it apart from every model name. */
export const loadJournalDirName = '.modelsync-loads';

/**
 * The load journal of the model dir `root`. An entry is written (and its dir flushed) before each load call and
 * removed when the server confirms it; at start-up every entry whose model dir still exists names a load to redo.
 */
export const loadJournal = (options: { readonly root: string }): LoadJournal => {
  const root = resolve(options.root);
  const dir = join(root, loadJournalDirName);

  const entryOf = (name: ModelName): string => {
    const problem = modelNameProblem(name);
    if (problem !== undefined || basename(name) !== name) {
      throw permanentError(
        'refused',
        `refusing journal entry for ${JSON.stringify(name)}: ${problem ?? 'not a name'}`,
      );
    }
    return join(dir, name);
  };

  // Changes run one at a time: `confirmed` removes the dir once it is empty, which must not race another
  // model's `starting` between its mkdir and its write.
  let queue: Promise<unknown> = Promise.resolve();
  const inOrder = <T>(change: () => Promise<T>): Promise<T> => {
    const result = queue.then(change);
    queue = result.catch(() => undefined);
    return result;
  };

  // async, so a refused name rejects like every other failure instead of throwing at the call.
  const confirmed: LoadJournal['confirmed'] = async (name) => {
    const entry = entryOf(name);
    return inOrder(() =>
      step(`cannot record the load of ${name}`, async () => {
        await rm(entry, { force: true });
        // Leave the model dir holding only models when nothing is being loaded.
        await rmdir(dir).catch((cause: unknown) => {
          if (!isMissing(cause) && errorCode(cause) !== 'ENOTEMPTY' && errorCode(cause) !== 'EEXIST')
            throw cause;
        });
      }),
    );
  };

  const exists = (path: string): Promise<boolean> =>
    lstat(path).then(
      () => true,
      (cause: unknown) => {
        if (isMissing(cause)) return false;
        throw fsError(`cannot stat ${path}`, cause);
      },
    );

  return {
    starting: async (name) => {
      const entry = entryOf(name);
      return inOrder(() =>
        step(`cannot record the load of ${name}`, async () => {
          await mkdir(dir, { recursive: true });
          await writeFile(entry, '');
          await syncPath(dir);
        }),
      );
    },
    confirmed,
    unconfirmed: async () => {
      let entries: string[];
      try {
        entries = await readdir(dir);
      } catch (cause) {
        if (isMissing(cause)) return new Set();
        throw fsError(`cannot list ${dir}`, cause);
      }
      const unconfirmed = new Set<ModelName>();
      for (const entry of entries) {
        const name = entry as ModelName;
        if (modelNameProblem(entry) !== undefined) continue;
        // An entry without a model dir (a crash between deleting a model and its entry) means nothing any more.
        if (await exists(join(root, entry))) unconfirmed.add(name);
        else await confirmed(name);
      }
      return unconfirmed;
    },
  };
};
