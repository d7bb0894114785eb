/** The bench's own file system: the suites' TMPDIR on a fresh journaled ext4, or the machine's where none can be made. */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onOwnFileSystem } from '../../bench/own-file-system';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('bench-own-fs');

/** Runs `command` (a shell line) through onOwnFileSystem with TMPDIR = the test's dir; `prefix` runs it (unshare -m). */
const run = (command: string, env: NodeJS.ProcessEnv = {}, prefix: string[] = []) => {
  const base = join(tmp.path, 'base');
  mkdirSync(base, { recursive: true });
  const [file, ...args] = [...prefix, 'sh', '-c', onOwnFileSystem, 'sh', 'sh', '-c', command];
  const result = spawnSync(file, args, {
    encoding: 'utf8',
    env: { ...process.env, TMPDIR: base, ...env },
  });
  return { ...result, leftovers: readdirSync(base) };
};

const report = 'echo "$MODELSYNC_BENCH_FS|$TMPDIR"; stat -f -c %T "$TMPDIR"; exit 7';

it('runs the command on the machine TMPDIR, with its exit status, when no ext4 can be made, and leaves nothing', () => {
  const fakeBin = join(tmp.path, 'bin');
  mkdirSync(fakeBin);
  writeFileSync(join(fakeBin, 'mkfs.ext4'), '#!/bin/sh\nexit 1\n');
  chmodSync(join(fakeBin, 'mkfs.ext4'), 0o755);
  const { status, stdout, leftovers } = run(report, { PATH: `${fakeBin}:${process.env.PATH}` });
  expect(status).toBe(7);
  expect(stdout).toContain(
    `the machine's TMPDIR, ${join(tmp.path, 'base')} (no ext4 of its own could be made)|${join(tmp.path, 'base')}`,
  );
  expect(leftovers).toEqual([]);
});

// Root with a mount namespace of its own (CI's machines, as `npm run bench` runs there): the real mount.
const canMount =
  process.getuid?.() === 0 &&
  spawnSync('unshare', ['-m', 'true']).status === 0 &&
  spawnSync('mkfs.ext4', ['-V']).status === 0;

it('mounts a fresh ext4 with a journal as TMPDIR where it can (root, unshare -m), and removes it after', () => {
  const { status, stdout, leftovers } = run(report, {}, canMount ? ['unshare', '-m'] : []);
  expect(status).toBe(7);
  if (canMount) {
    expect(stdout).toMatch(
      /^a journaled ext4 of its own \(loop image, 24 GiB\)\|.*modelsync-bench-mnt\.\w+\next2\/ext3\n$/,
    );
  } else {
    // Not root here: the script must still run the command, on the machine's TMPDIR.
    expect(stdout).toContain("the machine's TMPDIR");
  }
  expect(leftovers).toEqual([]);
});
