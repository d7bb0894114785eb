/**
 * The name a model's own files give it, where a server reads it (Triton's config.pbtxt, MLServer's
 * model-settings.json), and the check before a load that it is the name the config gives.
 */
import { join } from 'node:path';
import { isLeft, isRight } from 'fp-ts/Either';
import { permanentError, type EffectError } from '../core/errors';
import { describeJsonProblem, parseJson } from '../core/json/json';
import { jsonObject } from '../core/json/json-object';
import type { ModelName } from '../core/model-name';
import { within } from '../core/waits';
import { readSmallFile, withDir } from '../fs';
import { pbtxtName } from './pbtxt-name';

/** Where one server reads a model's own name, and what it does when that name is not the one it was asked for. */
export interface NameFile {
  /** The file at the top of the model dir, e.g. `config.pbtxt`. */
  readonly file: string;
  /** The field, as the file spells it, for the message. */
  readonly field: string;
  /** The name the file's text gives, or undefined when it gives none clearly (the server then decides alone). */
  readonly nameIn: (text: string) => string | undefined;
  /** What the server does with such a model, for the message. */
  readonly consequence: string;
  /**
   * Why the server answers a load of the model 404 although its dir is there, from the file's text (null: there
   * is no such file), for a server that finds a model only by this file; absent: the server has no such 404.
   */
  readonly notFoundNote?: (text: string | null) => string;
}

/** Triton: `name:` at the top of config.pbtxt, optional; when given it must equal the dir's name. */
export const tritonNameFile: NameFile = {
  file: 'config.pbtxt',
  field: 'name:',
  nameIn: pbtxtName,
  consequence: 'Triton refuses to load a model whose config.pbtxt names it otherwise',
};

/** MLServer: `"name"` at the top of model-settings.json; when given, MLServer knows the model by it alone. */
export const mlserverNameFile: NameFile = {
  file: 'model-settings.json',
  field: '"name"',
  nameIn: (text) => {
    const parsed = parseJson(text);
    const name = isRight(parsed) ? jsonObject(parsed.right)?.['name'] : undefined;
    return typeof name === 'string' ? name : undefined;
  },
  consequence: 'MLServer finds a model only by the name its model-settings.json gives',
  // MLServer lists its repository at each load and skips a settings file it cannot parse or validate, logging why.
  notFoundNote: (text) => {
    if (text === null)
      return 'there is no model-settings.json at the top of its dir: MLServer finds a model by one';
    const parsed = parseJson(text);
    if (isLeft(parsed) && parsed.left._tag !== 'Structure')
      return `its model-settings.json is no JSON object (${describeJsonProblem(parsed.left)}): MLServer skips such a file`;
    if (isRight(parsed) && jsonObject(parsed.right) === undefined)
      return 'its model-settings.json is no JSON object: MLServer skips such a file';
    return 'MLServer did not take its model-settings.json (its log says why: a field it does not validate, say)';
  },
};

/** A config.pbtxt is a few KiB; one past this is read by the server alone. */
const maxNameFileBytes = 1024 * 1024;

/** `text` quoted for a message, at most 200 characters (a name read from files is anyone's). */
export const quoted = (text: string): string =>
  JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);

/** The refusal of model `name` whose files call it `found`: both names, and that they must match. */
export const misnamedModel = (name: ModelName, found: string, nameFile: NameFile): EffectError =>
  permanentError(
    'refused',
    `the config names the model ${quoted(name)} but its ${nameFile.file} names it ${quoted(found)} ` +
      `(${nameFile.field}): the two names must match (or leave ${nameFile.field} out of ${nameFile.file}); ` +
      nameFile.consequence,
  );

/**
 * The text of `<modelDir>/<name>/<file>`; null when there is no such file; undefined when it was not read: a link,
 * a file past 1 MiB, a read that has not ended within `withinMs` (a hung mount: the load holds a load slot; the read
 * closes what it opened whenever it ends).
 */
export const readNameFile = async (
  modelDir: string,
  name: ModelName,
  nameFile: NameFile,
  withinMs = 30_000,
): Promise<string | null | undefined> => {
  const read = withDir(join(modelDir, name), (dir) =>
    readSmallFile(`${dir.ref}/${nameFile.file}`, maxNameFileBytes, nameFile.file, 'refuse').then((bytes) =>
      bytes.toString('utf8'),
    ),
  ).catch((error: unknown) =>
    (error as { code?: unknown } | undefined)?.code === 'ENOENT' ? null : undefined,
  );
  return within(read, withinMs, () => undefined);
};

/**
 * Throws `misnamedModel` when `text` (readNameFile's) names the model otherwise. Any doubt lets the load go ahead
 * and the server answer: no text, text that does not parse, no name, an empty one (the server then takes the dir's
 * name).
 */
export const refuseMisnamed = (
  name: ModelName,
  text: string | null | undefined,
  nameFile: NameFile,
): void => {
  const found = typeof text === 'string' ? nameFile.nameIn(text) : undefined;
  if (found !== undefined && found !== '' && found !== name) throw misnamedModel(name, found, nameFile);
};

/** Rejects with `misnamedModel` when `<modelDir>/<name>/<file>` names the model otherwise (readNameFile, refuseMisnamed). */
export const checkNameInFiles = async (
  modelDir: string,
  name: ModelName,
  nameFile: NameFile,
  withinMs = 30_000,
): Promise<void> => refuseMisnamed(name, await readNameFile(modelDir, name, nameFile, withinMs), nameFile);
