/**
 * A mount that stops answering, as a dead NFS server's or a stuck FUSE daemon's does: a FUSE file system mounted over
 * a dir whose daemon (a few lines of Python) never reads /dev/fuse, so every call that reaches it waits for an answer
 * (the kernel's FUSE_INIT is never answered). Needs root (CAP_SYS_ADMIN) and /dev/fuse, as this machine and CI give.
 * `release` kills the daemon (the calls waiting fail with ENOTCONN) and detaches the mount: the dir is as before.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';

const daemon = `
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open('/dev/fuse', os.O_RDWR)
options = f'fd={fd},rootmode=40000,user_id=0,group_id=0'.encode()
if libc.mount(b'modelsync-hung', sys.argv[1].encode(), b'fuse', 0, options) != 0:
    sys.exit('mount: ' + os.strerror(ctypes.get_errno()))
print('mounted', flush=True)
signal.pause()
`;

export interface HungMount {
  /** Ends the hang: the daemon killed, the mount detached (`umount -l`). */
  release(): Promise<void>;
}

/** Mounts a file system that never answers over `dir`; resolves once it is mounted. */
export const hangMount = async (dir: string): Promise<HungMount> => {
  const child = spawn('python3', ['-c', daemon, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [line] = (await Promise.race([
    once(child.stdout, 'data'),
    once(child, 'exit').then(() => {
      throw new Error(`the hung mount's daemon could not mount ${dir}: ${stderr.trim()}`);
    }),
  ])) as [Buffer];
  if (line.toString().trim() !== 'mounted')
    throw new Error(`the hung mount's daemon said ${line.toString()}`);
  let released: Promise<void> | undefined;
  return {
    release: () =>
      (released ??= (async () => {
        const exited = child.exitCode === null ? once(child, 'exit') : Promise.resolve();
        child.kill('SIGKILL');
        await exited;
        await promisify(execFile)('umount', ['-l', dir]);
      })()),
  };
};
