/**
 * quick's guard against mounts, with real mounts (a tmpfs; root, as CI runs): a root with a mount below it is refused,
 * and a mount made after a root was accepted (the hung-mount case: a FUSE mount over the model dir) sends every call
 * through libuv's pool again, where mountWatch can tell a call that never returns.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { quick, quickNowhere, quickUnder } from '../../src/fs';
import { settledThisTurn } from '../helpers/settled-this-turn';

const run = promisify(execFile);

/** Lets the recheck interval pass (the mount table is read at most once every 5 ms). */
const pastRecheck = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 10));

let root: string;
const mounted: string[] = [];
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-quick-mounts-'));
  mkdirSync(path.join(root, 'below'));
});
afterEach(async () => {
  quickNowhere();
  for (const dir of mounted.splice(0)) await run('umount', ['-l', dir]);
  rmSync(root, { recursive: true, force: true });
});

const mountTmpfs = async (dir: string): Promise<void> => {
  await run('mount', ['-t', 'tmpfs', 'modelsync-quick', dir]);
  mounted.push(dir);
};

it('refuses a root with a mount below it: a call there could reach another file system', async () => {
  await mountTmpfs(path.join(root, 'below'));
  expect(await quickUnder([root])).toEqual([]);
  expect(await settledThisTurn(() => quick.lstat(path.join(root, 'below')))).toBe(false);
});

it('sends every call through the pool again, for good, once a mount is made after the root was accepted', async () => {
  expect(await quickUnder([root])).toContain(root);
  await pastRecheck();
  expect(await settledThisTurn(() => quick.lstat(path.join(root, 'below')))).toBe(true);
  await mountTmpfs(path.join(root, 'below'));
  await pastRecheck();
  expect(await settledThisTurn(() => quick.lstat(path.join(root, 'below')))).toBe(false);
  expect(await settledThisTurn(() => quick.lstat(root))).toBe(false);
  await run('umount', ['-l', mounted.pop()!]);
  await pastRecheck();
  expect(await settledThisTurn(() => quick.lstat(root))).toBe(false);
});
