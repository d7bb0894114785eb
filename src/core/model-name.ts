/** ModelName: a model's name, which becomes a directory name, so anything that could escape or hide it is refused. */
import * as t from 'io-ts';
import { hasLoneSurrogate } from './json/json';
import { previewValue } from './preview';

export interface ModelNameBrand {
  readonly ModelName: unique symbol;
}
export type ModelName = t.Branded<string, ModelNameBrand>;

const maxNameBytes = 255;
const utf8 = new TextEncoder();

/** Why `name` cannot be a model name, or undefined when it can. */
export const modelNameProblem = (name: string): string | undefined => {
  if (name.length === 0) return 'must not be empty';
  if (name === '.' || name === '..') return `must not be "${name}"`;
  if (name.startsWith('.')) return 'must not start with "."';
  if (/[/\\\0]/.test(name)) return 'must not contain "/", "\\" or NUL';
  // "a\ud800" and "a\udc00" would share a dir: no name a dir or a model server's URL can hold.
  if (hasLoneSurrogate(name)) return 'must be valid Unicode text (it has a lone UTF-16 surrogate)';
  // A UTF-16 unit is at most 3 UTF-8 bytes: only long names need encoding to be measured.
  if (name.length * 3 > maxNameBytes && utf8.encode(name).length > maxNameBytes) {
    return `must be at most ${maxNameBytes} bytes`;
  }
  return undefined;
};

/** io-ts codec for ModelName; its failure message says which rule the name breaks. */
export const ModelName = new t.Type<ModelName, string, unknown>(
  'ModelName',
  (u): u is ModelName => typeof u === 'string' && modelNameProblem(u) === undefined,
  (u, context) => {
    if (typeof u !== 'string') return t.failure(u, context);
    const problem = modelNameProblem(u);
    return problem === undefined
      ? t.success(u as ModelName)
      : t.failure(u, context, `model name ${previewValue(u)} ${problem}`);
  },
  (name) => name,
);
