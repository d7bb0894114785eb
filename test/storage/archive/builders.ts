/** Archive builders: raw ustar and zip bytes, so tests can write the hostile entries real tools refuse to make. */
import { Readable, Writable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32, createDeflateRaw, createGzip, deflateRawSync, gzipSync } from 'node:zlib';

/** `bytes` as a stream of chunks of at most `size` bytes. */
export const chunked = (bytes: Buffer, size = 1000): AsyncIterable<Uint8Array> =>
  Readable.from(
    Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) =>
      bytes.subarray(i * size, (i + 1) * size),
    ),
  );

/**
 * One tar entry: type '0' file, '1' hard link, '2' symlink, '3' character device, '4' block device, '5' directory,
 * '6' FIFO, 'x' pax extended header.
 */
export interface TarEntry {
  readonly name: string;
  readonly content?: string;
  readonly type?: '0' | '1' | '2' | '3' | '4' | '5' | '6' | 'x';
  readonly linkname?: string;
  readonly mode?: number;
  /** pax extended header records written just before the entry (`path` overrides the name: any length). */
  readonly pax?: Readonly<Record<string, string>>;
}

/** One pax record, `<length> <key>=<value>\n`, whose length counts its own digits. */
const paxRecord = (key: string, value: string): string => {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body);
  while (`${length}${body}`.length !== length) length = Buffer.byteLength(`${length}${body}`);
  return `${length}${body}`;
};

/** The 512-byte ustar header of `entry` announcing `size` bytes of content. */
export const tarHeader = (entry: TarEntry, size: number): Buffer => {
  const header = Buffer.alloc(512);
  const octal = (value: number, width: number): string => `${value.toString(8).padStart(width - 1, '0')}\0`;
  header.write(entry.name, 0, 100, 'utf8');
  header.write(octal(entry.mode ?? (entry.type === '5' ? 0o755 : 0o644), 8), 100);
  header.write(octal(0, 8), 108);
  header.write(octal(0, 8), 116);
  header.write(octal(size, 12), 124);
  header.write(octal(1_700_000_000, 12), 136);
  header.write('        ', 148);
  header.write(entry.type ?? '0', 156);
  header.write(entry.linkname ?? '', 157, 100, 'utf8');
  header.write('ustar\0', 257);
  header.write('00', 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return header;
};

/** A whole ustar archive of `entries`, in order, duplicates and all. */
export const tarball = (entries: ReadonlyArray<TarEntry>): Buffer => {
  const blocks: Buffer[] = [];
  const padded = (content: Buffer): Buffer[] => [content, Buffer.alloc((512 - (content.length % 512)) % 512)];
  for (const entry of entries) {
    if (entry.pax !== undefined) {
      const records = Buffer.from(
        Object.entries(entry.pax)
          .map(([k, v]) => paxRecord(k, v))
          .join(''),
      );
      blocks.push(tarHeader({ name: 'PaxHeader', type: 'x' }, records.length), ...padded(records));
    }
    const content = Buffer.from(entry.content ?? '');
    blocks.push(tarHeader(entry, content.length), ...padded(content));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
};

/** tarball, gzipped. */
export const tgz = (entries: ReadonlyArray<TarEntry>): Buffer => gzipSync(tarball(entries));

/** One zip entry, stored (or, with `deflate`, deflated). A name ending in '/' is a directory; `mode` is the Unix st_mode. */
export interface ZipEntry {
  readonly name: string;
  readonly content?: string | Buffer;
  readonly mode?: number;
  readonly deflate?: boolean;
  /** A CRC-32 to record instead of the content's (a corrupt entry). */
  readonly crc?: number;
}

/** A symlink entry for zipArchive: its content is the link target. */
export const zipLink = (name: string, target: string): ZipEntry => ({
  name,
  content: target,
  mode: 0o120777,
});

/** A zip entry as written: its data as stored, and what it expands to. */
interface ZipRecord {
  readonly name: string;
  readonly mode: number;
  readonly method: 0 | 8;
  readonly data: Buffer;
  readonly crc: number;
  readonly size: number;
}

const zipOf = (records: ReadonlyArray<ZipRecord>): Buffer => {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const record of records) {
    const name = Buffer.from(record.name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // names are UTF-8
    local.writeUInt16LE(record.method, 8);
    local.writeUInt32LE(record.crc, 14);
    local.writeUInt32LE(record.data.length, 18);
    local.writeUInt32LE(record.size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(record.method, 10);
    central.writeUInt32LE(record.crc, 16);
    central.writeUInt32LE(record.data.length, 20);
    central.writeUInt32LE(record.size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((record.mode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, record.data);
    centrals.push(central, name);
    offset += local.length + name.length + record.data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(records.length, 8);
  end.writeUInt16LE(records.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
};

/** A zip archive of `entries` with any names (absolute, `..`, backslashes, duplicates) and Unix modes. */
export const zipArchive = (entries: ReadonlyArray<ZipEntry>): Buffer =>
  zipOf(
    entries.map((entry) => {
      const content = Buffer.from(entry.content ?? '');
      return {
        name: entry.name,
        mode: entry.mode ?? (entry.name.endsWith('/') ? 0o40755 : 0o100644),
        method: entry.deflate === true ? 8 : 0,
        data: entry.deflate === true ? deflateRawSync(content) : content,
        crc: entry.crc ?? crc32(content),
        size: content.length,
      };
    }),
  );

const MiB = 2 ** 20;

/** `bytes` zero bytes in chunks of at most 1 MiB, never all in memory. */
function* zeros(bytes: number): Generator<Buffer> {
  const block = Buffer.alloc(MiB);
  for (let left = bytes; left > 0; left -= MiB) yield left >= MiB ? block : block.subarray(0, left);
}

const squeezed = async (source: Iterable<Buffer>, squeeze: Transform): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  const collect = new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      chunks.push(chunk);
      done();
    },
  });
  await pipeline(source, squeeze, collect);
  return Buffer.concat(chunks);
};

/** A tar.gz of one file of `bytes` zero bytes (a gzip bomb: about 1 KiB per MiB), built as a stream. */
export const tgzBomb = (bytes: number): Promise<Buffer> =>
  squeezed(
    (function* () {
      yield tarHeader({ name: 'zeros.bin' }, bytes);
      yield* zeros(bytes + ((512 - (bytes % 512)) % 512) + 1024);
    })(),
    createGzip({ level: 9 }),
  );

/** A zip of `copies` deflated files of `bytes` zero bytes each (a zip bomb), built as a stream. */
export const zipBomb = async (bytes: number, copies = 1): Promise<Buffer> => {
  let crc = 0;
  const data = await squeezed(
    (function* () {
      for (const chunk of zeros(bytes)) {
        crc = crc32(chunk, crc);
        yield chunk;
      }
    })(),
    createDeflateRaw({ level: 9 }),
  );
  const record = { mode: 0o100644, method: 8 as const, data, crc, size: bytes };
  return zipOf(Array.from({ length: copies }, (_, i) => ({ ...record, name: `zeros-${i}.bin` })));
};
