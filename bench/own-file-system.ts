/**
 * Where the suites write: a fresh journaled ext4 of the run's own, as a node's disk is (kubelet's emptyDir and
 * ConfigMap volumes live on it), loop-mounted in the run's own mount namespace and gone with it.
 *
 * Why not the machine's TMPDIR: here it is ext4 without a journal, mounted with `discard`. There each new inode is
 * searched past every inode freed in the last minutes (the kernel's `recently_deleted`, a check ext4 makes only
 * without a journal), so once a suite removed 1,000 model dirs a create cost 0.3-0.8 ms where a journaled ext4 takes
 * ~0.04, and a swap's clean-up of the old version dir (the clock starts after it) took 0.5-1.5 ms while the pullers
 * already worked. There the Go agent took 1.3-1.9 s and 1.7-2.9 CPU-s for 1,000 models in one swap, 0.5-0.7 of each
 * on the journaled ext4 (docs/benchmarks.md, "Where the suites write").
 */

/** The environment variable that says, inside the run, where the suites write (`describeFileSystem`). */
const fileSystemVariable = 'MODELSYNC_BENCH_FS';

/**
 * A shell script that runs `"$@"` with TMPDIR on a fresh journaled ext4 (a 24 GiB sparse image beside the machine's
 * TMPDIR; 1 inode per 64 KiB keeps its inode tables, written at once, to 96 MiB), unmounted after; where it cannot
 * make one (no mkfs.ext4, no loop device, not root), `"$@"` runs on the machine's TMPDIR and says so. Its exit
 * status is the command's. Needs a mount namespace of its own (`unshare -m`), or the mount would outlive a killed run.
 */
export const onOwnFileSystem = [
  'base=${TMPDIR:-/tmp}',
  'img= mnt= mounted=0',
  'if img=$(mktemp "$base/modelsync-bench-fs.XXXXXX") && mnt=$(mktemp -d "$base/modelsync-bench-mnt.XXXXXX") &&',
  '  truncate -s 24G "$img" && mkfs.ext4 -q -F -i 65536 -E lazy_itable_init=0,lazy_journal_init=0 "$img" &&',
  '  mount -o loop "$img" "$mnt" && chmod 1777 "$mnt"; then',
  `  export ${fileSystemVariable}="a journaled ext4 of its own (loop image, 24 GiB)" TMPDIR="$mnt"; mounted=1`,
  'else',
  `  export ${fileSystemVariable}="the machine's TMPDIR, $base (no ext4 of its own could be made)"`,
  'fi',
  // While mounted, the loop device holds the image open; its blocks go with the mount.
  '[ -n "$img" ] && rm -f "$img"',
  '"$@"',
  'status=$?',
  'if [ "$mounted" = 1 ]; then umount "$mnt"; fi',
  '[ -n "$mnt" ] && rmdir "$mnt"',
  'exit $status',
].join('\n');

/** Where the suites of this run write, in words (the machine's TMPDIR when the runner made no file system). */
export const describeFileSystem = (): string =>
  process.env[fileSystemVariable] ?? `the machine's TMPDIR, ${process.env.TMPDIR ?? '/tmp'}`;
