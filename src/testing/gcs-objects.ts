/** What the GCS stand-in says of a stored object: its resource, its hashes, the part of it a Range asks for. */
import { createHash } from 'node:crypto';

/** One version of an object as the stand-in keeps it. */
export interface StoredObject {
  readonly data: Buffer;
  readonly generation: string;
  readonly updated: string;
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

// An object's bytes never change (a new upload is a new Buffer): each digest is computed once per Buffer, not per
// request (a ranged download of 64 MiB asks for metadata and media dozens of times; CRC32C in JS costs ~50 ms/MiB).
const digests = new WeakMap<Buffer, Map<string, string>>();
const once = (data: Buffer, kind: string, compute: () => string): string => {
  const known = digests.get(data) ?? new Map<string, string>();
  digests.set(data, known);
  const value = known.get(kind) ?? compute();
  known.set(kind, value);
  return value;
};

/** CRC32C (Castagnoli), big-endian, base64: the form of GCS's `crc32c` field and `x-goog-hash`. */
export const crc32c = (data: Buffer): string => once(data, 'crc32c', () => crc32cOf(data));

const crc32cOf = (data: Buffer): string => {
  let crc = 0xffffffff;
  for (const byte of data) crc = crcTable[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return out.toString('base64');
};

/** MD5, base64: the form of GCS's `md5Hash` field and `x-goog-hash`. */
export const md5 = (data: Buffer): string =>
  once(data, 'md5', () => createHash('md5').update(data).digest('base64'));

/** The object resource GCS's JSON API answers for `object` (metadata, list items). */
export const resource = (bucket: string, name: string, object: StoredObject): Record<string, string> => ({
  kind: 'storage#object',
  id: `${bucket}/${name}/${object.generation}`,
  name,
  bucket,
  generation: object.generation,
  metageneration: '1',
  contentType: 'application/octet-stream',
  size: String(object.data.length),
  md5Hash: md5(object.data),
  crc32c: crc32c(object.data),
  etag: `C${object.generation}`,
  updated: object.updated,
  timeCreated: object.updated,
  storageClass: 'STANDARD',
});

/** `bytes=a-`, `bytes=a-b`, `bytes=-n` against `size`: the inclusive span, or undefined when unsatisfiable. */
export const parseRange = (header: string, size: number): readonly [number, number] | undefined => {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (match === null) return [0, size - 1];
  const [, from, to] = match;
  if (from === '') return to === '' ? undefined : [Math.max(0, size - Number(to)), size - 1];
  const start = Number(from);
  const end = to === '' ? size - 1 : Math.min(Number(to), size - 1);
  return start < size && start <= end ? [start, end] : undefined;
};
