/** onRemoteFileSystem: whether a path lies where a call may wait for a server (NFS, SMB, FUSE, ...) for good. */
import { statfs } from 'node:fs/promises';

// statfs f_type values (linux/magic.h) of file systems whose calls go to a server or a daemon: NFS, SMB, CIFS, SMB2,
// FUSE (s3fs, gcsfuse, sshfs, ...), 9p, Ceph, kAFS, OpenAFS, Coda, Lustre, GFS2, OCFS2.
const remoteTypes: ReadonlySet<number> = new Set([
  0x6969, 0x517b, 0xff534d42, 0xfe534d42, 0x65735546, 0x01021997, 0x00c36400, 0x6b414653, 0x5346414f,
  0x73757245, 0x0bd00bd0, 0x01161970, 0x7461636f,
]);

/** Whether a statfs `type` is one of those file systems (compared as the kernel's unsigned 32 bits). */
export const isRemoteFileSystemType = (type: number): boolean => remoteTypes.has(type >>> 0);

/** True on such a file system, or when statfs fails (nothing known: the careful answer). */
export const onRemoteFileSystem = (path: string): Promise<boolean> =>
  statfs(path).then(
    ({ type }) => isRemoteFileSystemType(type),
    () => true,
  );
