/** The compressions a tar may come in that modelsync does not read, told by their magic bytes. */

// The compressions Python's tarfile reads (KServe's initializer) but we do not, by their magic bytes; no tar opens
// so (a tar opens with an entry's name: none holds bzip2's block or end magic, nor the bytes 0xFD or 0xB5 alone).
const otherCompressions: ReadonlyArray<{ readonly name: string; readonly magic: ReadonlyArray<Buffer> }> = [
  { name: 'xz', magic: [Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])] },
  { name: 'zstd', magic: [Buffer.from([0x28, 0xb5, 0x2f, 0xfd])] },
  // `BZh`, the block size (1-9), then the first block's magic (pi) or, for nothing, the end's (sqrt pi).
  {
    name: 'bzip2',
    magic: '123456789'
      .split('')
      .flatMap((size) => [`BZh${size}\x31\x41\x59\x26\x53\x59`, `BZh${size}\x17\x72\x45\x38\x50\x90`])
      .map((magic) => Buffer.from(magic, 'latin1')),
  },
];
/** How many bytes of a stream's head `unreadCompression` needs. */
export const compressionMagicBytes = 10;
const startsWith = (head: Buffer, magic: Buffer): boolean =>
  head.length >= magic.length && head.subarray(0, magic.length).equals(magic);

/** The name of the compression `head` opens with among those Python's tarfile reads and modelsync does not, if any. */
export const unreadCompression = (head: Buffer): string | undefined =>
  otherCompressions.find(({ magic }) => magic.some((bytes) => startsWith(head, bytes)))?.name;
