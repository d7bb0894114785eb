/** Archive builders: raw ustar and zip bytes, so tests can write the hostile entries real tools refuse to make. */
import { crc32, gzipSync } from 'node:zlib';

/** One tar entry: type '0' file, '1' hard link, '2' symlink, '3' character device, '5' directory, '6' FIFO. */
export interface TarEntry {
  readonly name: string;
  readonly content?: string;
  readonly type?: '0' | '1' | '2' | '3' | '5' | '6';
  readonly linkname?: string;
  readonly mode?: number;
}

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
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    blocks.push(
      tarHeader(entry, content.length),
      content,
      Buffer.alloc((512 - (content.length % 512)) % 512),
    );
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
};

/** tarball, gzipped. */
export const tgz = (entries: ReadonlyArray<TarEntry>): Buffer => gzipSync(tarball(entries));

/** One zip entry, stored uncompressed. A name ending in '/' is a directory; `mode` is the Unix st_mode. */
export interface ZipEntry {
  readonly name: string;
  readonly content?: string;
  readonly mode?: number;
}

/** A symlink entry for zipArchive: its content is the link target. */
export const zipLink = (name: string, target: string): ZipEntry => ({
  name,
  content: target,
  mode: 0o120777,
});

/** A zip archive of `entries` with any names (absolute, `..`, backslashes, duplicates) and Unix modes. */
export const zipArchive = (entries: ReadonlyArray<ZipEntry>): Buffer => {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const content = Buffer.from(entry.content ?? '');
    const crc = crc32(content);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // names are UTF-8
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(content.length, 18);
    local.writeUInt32LE(content.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(content.length, 20);
    central.writeUInt32LE(content.length, 24);
    central.writeUInt16LE(name.length, 28);
    const mode = entry.mode ?? (entry.name.endsWith('/') ? 0o40755 : 0o100644);
    central.writeUInt32LE((mode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, content);
    centrals.push(central, name);
    offset += local.length + name.length + content.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
};
