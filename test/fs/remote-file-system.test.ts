import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRemoteFileSystemType, onRemoteFileSystem } from '../../src/fs/remote-file-system';

describe('isRemoteFileSystemType', () => {
  it('knows NFS, SMB and FUSE by their statfs types, as Node reports them either signed or unsigned', () => {
    expect(isRemoteFileSystemType(0x6969)).toBe(true); // NFS
    expect(isRemoteFileSystemType(0x65735546)).toBe(true); // FUSE
    expect(isRemoteFileSystemType(0xff534d42)).toBe(true); // CIFS
    expect(isRemoteFileSystemType(0xff534d42 - 2 ** 32)).toBe(true); // the same, as a signed 32-bit value
  });

  it('leaves local file systems to inline writes: ext4, XFS, Btrfs, tmpfs, overlayfs', () => {
    for (const local of [0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630])
      expect(isRemoteFileSystemType(local)).toBe(false);
  });
});

describe('onRemoteFileSystem', () => {
  it('says false for a dir on the local disk, and true (the careful answer) when statfs fails', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'remote-fs-'));
    try {
      await expect(onRemoteFileSystem(dir)).resolves.toBe(false);
      await expect(onRemoteFileSystem(join(dir, 'missing'))).resolves.toBe(true);
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});
