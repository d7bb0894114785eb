/**
 * MLServer finds a model by scanning its whole repository for `model-settings.json`, at any depth, at each load
 * (a recursive glob, which skips hidden dirs), and takes every file whose `"name"` (or, without one, whose folder's
 * name) is the one asked for as a version of that model. One model's files holding such a file for another name
 * would therefore be served as that other model, at its next load: `mlserverSettingsVet` refuses them before they
 * are opened to the server.
 */
import { isRight } from 'fp-ts/Either';
import { posix } from 'node:path';
import { permanentError } from '../core/errors';
import { parseJson } from '../core/json/json';
import { jsonObject } from '../core/json/json-object';
import type { ModelName } from '../core/model-name';
import type { ModelFiles } from '../ports';
import { misnamedModel, mlserverNameFile, quoted } from './name-in-files';

/** A model-settings.json is a few KiB; one past this is not vetted, so not installed. */
const maxSettingsBytes = 1024 * 1024;

/** True for a path MLServer's scan reads: named model-settings.json, under no dir Python's glob `**` skips (hidden). */
const isScannedSettings = (path: string): boolean => {
  const parts = path.split('/');
  return parts.at(-1) === mlserverNameFile.file && parts.every((part) => !part.startsWith('.'));
};

/**
 * The name MLServer gives the settings at `path` (relative to the dir of model `name`): its `"name"` when that is a
 * non-empty string, else its folder's name; undefined for a file MLServer skips (no JSON object, a name of
 * another type: pydantic refuses it, and MLServer logs and skips the file).
 */
const settingsName = (name: ModelName, path: string, text: string): string | undefined => {
  const parsed = parseJson(text);
  const settings = isRight(parsed) ? jsonObject(parsed.right) : undefined;
  if (settings === undefined) return undefined;
  const given = settings['name'];
  if (given !== undefined && typeof given !== 'string') return undefined;
  if (given !== undefined && given !== '') return given;
  const folder = posix.dirname(path);
  return folder === '.' ? name : posix.basename(folder);
};

/**
 * Rejects (permanent `refused`) when `files`, to be model `name`'s, hold a model-settings.json MLServer would take
 * for another model: at the top with another `"name"`, or deeper, naming another model or (without a name) in a
 * folder named otherwise.
 */
export const mlserverSettingsVet = async (name: ModelName, files: ModelFiles): Promise<void> => {
  for (const path of [...files.sizes.keys()].filter(isScannedSettings).sort()) {
    const text = await files.read(path, maxSettingsBytes).catch((cause: unknown) => {
      throw permanentError(
        'refused',
        `model "${name}": its ${path} could not be read to be vetted (over ${maxSettingsBytes} bytes?); MLServer ` +
          'reads every model-settings.json in its repository, so these files are not installed',
        cause,
      );
    });
    const found = settingsName(name, path, text.toString('utf8'));
    if (found === undefined || found === name) continue;
    if (path === mlserverNameFile.file) throw misnamedModel(name, found, mlserverNameFile);
    throw permanentError(
      'refused',
      `model "${name}": its files hold ${path}, which MLServer would take for the model ${quoted(found)} (its ` +
        `"name", or without one its folder's name): MLServer reads every model-settings.json in its ` +
        `repository, so these files would be served as that model; remove the file, or give it "name": ` +
        `${JSON.stringify(name)}`,
    );
  }
};
