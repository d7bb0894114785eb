/** Tests of lockFile: one holder at a time across processes, released by its holder or by its death, no link followed. */
import { spawn } from 'node:child_process';
import { readFile, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lockFile, type HeldLock } from '../../src/fs/file-lock';
import { useTempDir } from '../helpers/temp-dir';

const never = new AbortController().signal;
const minute = 60_000;

describe('lockFile', () => {
  const tmp = useTempDir('file-lock');

  it('lets one holder in at a time: the next gets it once the first releases', async () => {
    const path = join(tmp.path, 'a.lock');
    const first = await lockFile(path, minute, never);
    const order: string[] = [];
    const second = lockFile(path, minute, never).then((held) => {
      order.push('second');
      return held;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    order.push('released');
    await first.release();
    await (await second).release();
    expect(order).toEqual(['released', 'second']);
  });

  it('locks the file at the path when the one it waited on was removed by its holder: never two holders', async () => {
    // A holder removes the lock file (an evicted entry's) before it releases; a waiter that opened the old file then
    // got a lock nobody else would ever wait on, beside the holder of the new file at the path.
    const path = join(tmp.path, 'r.lock');
    const first = await lockFile(path, minute, never);
    let second: HeldLock | undefined;
    const waiting = lockFile(path, minute, never).then((held) => (second = held));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the waiter has opened the first file
    await unlink(path);
    const third = await lockFile(path, minute, never); // the file made next at the path
    await first.release();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(second).toBeUndefined();
    await third.release();
    await (await waiting).release();
    expect(second).toBeDefined();
  });

  it('passes to the next holder when the process holding it is killed with SIGKILL', async () => {
    const path = join(tmp.path, 'b.lock');
    // Another process takes the lock (util-linux flock, replaced by the command it runs: one process), then dies.
    const holder = spawn('flock', ['--exclusive', '--no-fork', path, 'sleep', '60'], { stdio: 'ignore' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const waiting = lockFile(path, minute, never);
    let got = false;
    void waiting.then(() => (got = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(got).toBe(false);
    holder.kill('SIGKILL');
    await (await waiting).release();
    expect(got).toBe(true);
  });

  it('gives up after its wait while another holds the lock, and stops waiting when aborted', async () => {
    const path = join(tmp.path, 'c.lock');
    const held = await lockFile(path, minute, never);
    await expect(lockFile(path, 300, never)).rejects.toThrow(
      `${path} stayed locked by another process for 300 ms`,
    );
    const abort = new AbortController();
    const waiting = lockFile(path, minute, abort.signal);
    abort.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    await held.release();
    await (await lockFile(path, minute, never)).release();
  });

  it('refuses a link planted where the lock file goes, and leaves its target as it was', async () => {
    const victim = join(tmp.path, 'victim');
    await writeFile(victim, 'kept');
    await symlink(victim, join(tmp.path, 'd.lock'));
    await expect(lockFile(join(tmp.path, 'd.lock'), minute, never)).rejects.toMatchObject({
      message: expect.stringContaining('ELOOP') as unknown,
    });
    expect(await readFile(victim, 'utf8')).toBe('kept');
  });
});
