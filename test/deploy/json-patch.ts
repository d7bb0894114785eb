/** RFC 6902 JSON patches, as kustomize applies the `patches` entries that are lists of operations. */
/** A JSON value, as YAML manifests parse to. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** True for a JSON object (not an array, not null). */
export const isJsonObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const operations = ['add', 'remove', 'replace', 'move', 'copy', 'test'] as const;
type Operation = (typeof operations)[number];

interface PatchOp {
  readonly op: Operation;
  readonly path: string;
  readonly from?: string;
  readonly value?: Json;
}

/** A JSON pointer's reference tokens (`/a/b~1c` → `['a', 'b/c']`). */
const tokensOf = (pointer: string): string[] => {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`JSON pointer ${JSON.stringify(pointer)} must start with /`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
};

/** The index a token names in `array`; `-` (past the end) only where `forInsert`. */
const indexIn = (array: Json[], token: string, forInsert: boolean, pointer: string): number => {
  if (forInsert && token === '-') return array.length;
  const index = /^(0|[1-9]\d*)$/.test(token) ? Number(token) : NaN;
  if (!(index < array.length + (forInsert ? 1 : 0))) throw new Error(`${pointer}: no array index ${token}`);
  return index;
};

/** The container a pointer's last token lives in, and that token. */
const parentOf = (doc: Json, pointer: string): { container: Json; last: string } => {
  const tokens = tokensOf(pointer);
  const last = tokens.pop();
  if (last === undefined) throw new Error('a patch may not replace the whole document');
  const container = tokens.reduce<Json>((node, token) => {
    const next = Array.isArray(node)
      ? node[indexIn(node, token, false, pointer)]
      : isJsonObject(node)
        ? node[token]
        : undefined;
    if (next === undefined) throw new Error(`${pointer}: ${token} does not exist`);
    return next;
  }, doc);
  return { container, last };
};

const read = (doc: Json, pointer: string): Json => {
  if (pointer === '') return doc;
  const { container, last } = parentOf(doc, pointer);
  const value = Array.isArray(container)
    ? container[indexIn(container, last, false, pointer)]
    : isJsonObject(container)
      ? container[last]
      : undefined;
  if (value === undefined) throw new Error(`${pointer} does not exist`);
  return value;
};

const add = (doc: Json, pointer: string, value: Json): void => {
  const { container, last } = parentOf(doc, pointer);
  if (Array.isArray(container)) container.splice(indexIn(container, last, true, pointer), 0, value);
  else if (isJsonObject(container)) container[last] = value;
  else throw new Error(`${pointer}: the parent is not an object or an array`);
};

const remove = (doc: Json, pointer: string): Json => {
  const value = read(doc, pointer);
  const { container, last } = parentOf(doc, pointer);
  if (Array.isArray(container)) container.splice(indexIn(container, last, false, pointer), 1);
  else if (isJsonObject(container)) delete container[last];
  return value;
};

/** A deep copy (made here, not by structuredClone, whose objects come from another realm under jest). */
export const cloneJson = <T extends Json>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** Deep equality of JSON values, whatever the order of object keys. */
export const jsonEqual = (left: Json, right: Json): boolean => {
  if (Array.isArray(left) || Array.isArray(right))
    return (
      Array.isArray(left) &&
      Array.isArray(right) &&
      left.length === right.length &&
      left.every((item, index) => jsonEqual(item, right[index]!))
    );
  if (!isJsonObject(left) || !isJsonObject(right)) return left === right;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every((key) => key in right && jsonEqual(left[key]!, right[key]!))
  );
};

const parseOp = (entry: unknown): PatchOp => {
  const op = entry as Partial<PatchOp> | null;
  if (op === null || typeof op !== 'object' || !operations.includes(op.op as Operation))
    throw new Error(`expected an op of ${operations.join(', ')}`);
  if (typeof op.path !== 'string') throw new Error('expected a path');
  if ((op.op === 'move' || op.op === 'copy') && typeof op.from !== 'string')
    throw new Error(`${op.op} needs a from`);
  if (['add', 'replace', 'test'].includes(op.op!) && op.value === undefined)
    throw new Error(`${op.op} needs a value`);
  return op as PatchOp;
};

const applyOp = (doc: Json, op: PatchOp): void => {
  switch (op.op) {
    case 'add':
      return add(doc, op.path, cloneJson(op.value!));
    case 'remove':
      return void remove(doc, op.path);
    case 'replace':
      remove(doc, op.path);
      return add(doc, op.path, cloneJson(op.value!));
    case 'move':
      if (op.path.startsWith(`${op.from!}/`)) throw new Error(`cannot move ${op.from!} into itself`);
      return add(doc, op.path, remove(doc, op.from!));
    case 'copy':
      return add(doc, op.path, cloneJson(read(doc, op.from!)));
    case 'test':
      if (!jsonEqual(read(doc, op.path), op.value!))
        throw new Error(
          `test failed: ${op.path} is ${JSON.stringify(read(doc, op.path))}, not ${JSON.stringify(op.value)}`,
        );
  }
};

/** `doc` with the operations applied in order (a copy); throws naming the operation that cannot apply. */
export const applyJsonPatch = (doc: JsonObject, ops: unknown): JsonObject => {
  if (!Array.isArray(ops)) throw new Error('a JSON patch is a list of operations');
  const result = cloneJson(doc);
  ops.forEach((entry, index) => {
    try {
      applyOp(result, parseOp(entry));
    } catch (error) {
      throw new Error(`JSON patch operation ${index}: ${(error as Error).message}`, { cause: error });
    }
  });
  return result;
};
