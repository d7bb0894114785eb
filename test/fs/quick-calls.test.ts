import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installing, quick, quickNowhere, quickUnder, slowCreatesAbove, type Handle } from '../../src/fs';
import { settledThisTurn } from '../helpers/settled-this-turn';

let root: string;
let outside: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'modelsync-quick-'));
  outside = mkdtempSync(path.join(os.tmpdir(), 'modelsync-quick-outside-'));
  writeFileSync(path.join(root, 'file'), 'x');
  writeFileSync(path.join(outside, 'file'), 'x');
});
const create = (name: string) => () => quick.writeFile(path.join(root, name), 'x', { flag: 'wx' });
/** Files opened by `openNew`, closed after each case. */
const opened: Handle[] = [];
const openNew = (name: string) => () =>
  quick
    .open(path.join(root, name), constants.O_CREAT | constants.O_WRONLY | constants.O_EXCL)
    .then((handle) => void opened.push(handle));

afterEach(async () => {
  await Promise.all(opened.splice(0).map((handle) => handle.close()));
  quickNowhere();
  rmSync(root, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

it('makes no call inline before a root is accepted', async () => {
  expect(await settledThisTurn(() => quick.lstat(path.join(root, 'file')))).toBe(false);
});

it('makes the calls under an accepted root inline, and those elsewhere through the pool', async () => {
  expect(await quickUnder([root])).toContain(root);
  expect(await settledThisTurn(() => quick.lstat(path.join(root, 'file')))).toBe(true);
  expect(await settledThisTurn(() => quick.stat(root))).toBe(true);
  expect(await settledThisTurn(() => quick.statfs(root))).toBe(true);
  expect(await settledThisTurn(() => quick.lstat(path.join(outside, 'file')))).toBe(false);
  expect(await settledThisTurn(() => quick.statfs(outside))).toBe(false);
  // A `..` part may lead out of the root; kubelet's `..data` is a name, not a way up.
  expect(await settledThisTurn(() => quick.lstat(`${root}/../${path.basename(outside)}/file`))).toBe(false);
  writeFileSync(path.join(root, '..data'), 'x');
  expect(await settledThisTurn(() => quick.lstat(path.join(root, '..data')))).toBe(true);
  // A root's name is no prefix of its neighbours': `<root>-x` is not under `<root>`.
  mkdirSync(`${root}-x`);
  try {
    expect(await settledThisTurn(() => quick.lstat(`${root}-x`))).toBe(false);
  } finally {
    rmSync(`${root}-x`, { recursive: true });
  }
});

it('answers and fails as the pooled calls do: the same values, the same errno and message', async () => {
  await quickUnder([root]);
  const missing = path.join(root, 'missing');
  const inline = await quick.lstat(missing).catch((error: unknown) => error);
  const inlineStatfs = await quick.statfs(missing).catch((error: unknown) => error);
  quickNowhere();
  const pooled = await quick.lstat(missing).catch((error: unknown) => error);
  const pooledStatfs = await quick.statfs(missing).catch((error: unknown) => error);
  expect(inline).toMatchObject({ code: 'ENOENT', syscall: 'lstat', path: missing });
  expect((inline as Error).message).toBe((pooled as Error).message);
  expect(inlineStatfs).toMatchObject({ code: 'ENOENT', syscall: 'statfs', path: missing });
  expect((inlineStatfs as Error).message).toBe((pooledStatfs as Error).message);
  await quickUnder([root]);
  expect(await quick.readdir(root)).toEqual(['file']);
  expect((await quick.readdir(root, { withFileTypes: true })).map((entry) => entry.isFile())).toEqual([true]);
  const made = await quick.mkdtemp(path.join(root, '.tmp-'));
  expect(path.dirname(made)).toBe(root);
  await quick.writeFile(path.join(made, 'new'), 'abc', { flag: 'wx', mode: 0o600 });
  await expect(quick.writeFile(path.join(made, 'new'), 'abc', { flag: 'wx' })).rejects.toMatchObject({
    code: 'EEXIST',
  });
  await quick.rename(made, path.join(root, 'renamed'));
  expect((await quick.stat(path.join(root, 'renamed', 'new'))).size).toBe(3);
});

it('makes the calls through an inline handle inline, its path under /proc/self/fd too, but for the flushes', async () => {
  await quickUnder([root]);
  const dir = await quick.open(root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    const ref = `/proc/self/fd/${dir.fd}`;
    expect(await settledThisTurn(() => quick.lstat(`${ref}/file`))).toBe(true);
    expect(await settledThisTurn(() => dir.stat())).toBe(true);
    expect(await settledThisTurn(() => dir.sync())).toBe(false); // waits for the disk: never inline
  } finally {
    await dir.close();
  }
  await dir.close(); // a second close does nothing, as FileHandle's
  const pooled = await quick.open(outside, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    expect(await settledThisTurn(() => quick.lstat(`/proc/self/fd/${pooled.fd}/file`))).toBe(false);
  } finally {
    await pooled.close();
  }
});

it('reads a file through an inline handle as through a FileHandle', async () => {
  await quickUnder([root]);
  const file = await quick.open(path.join(root, 'file'), constants.O_RDWR);
  try {
    await file.writeFile('hello');
    const buffer = Buffer.alloc(8);
    expect(await file.read(buffer, 0, 8, 0)).toMatchObject({ bytesRead: 5 });
    expect(buffer.subarray(0, 5).toString()).toBe('hello');
  } finally {
    await file.close();
  }
});

it('accepts no root on a file system the kernel does not answer from local storage (procfs here)', async () => {
  expect(await quickUnder(['/proc/self'])).toEqual([]);
  expect(await settledThisTurn(() => quick.lstat('/proc/self/status'))).toBe(false);
});

it('creates files inline while one install at most is under way, whatever a create costs', async () => {
  await quickUnder([root]);
  slowCreatesAbove(0); // every create counts as slow
  const first = installing();
  expect(await settledThisTurn(create('alone'))).toBe(true);
  expect(await settledThisTurn(create('alone-and-slow'))).toBe(true);
  first();
});

it('creates files inline during a burst of installs while creates are quick', async () => {
  await quickUnder([root]);
  slowCreatesAbove(Infinity); // no create counts as slow
  const first = installing();
  const second = installing();
  expect(await settledThisTurn(create('two-under-way'))).toBe(true);
  expect(await settledThisTurn(() => quick.mkdtemp(path.join(root, '.tmp-')))).toBe(true);
  expect(await settledThisTurn(openNew('opened'))).toBe(true);
  second();
  first();
});

it('creates through the pool during a burst once creates are slow (four at once); one or two slow ones are no sign', async () => {
  await quickUnder([root]);
  slowCreatesAbove(0, 60_000); // every create is slow; three of the last 16 keep a burst's creates pooled for a minute
  const first = installing();
  expect(await settledThisTurn(create('alone'))).toBe(true); // inline (alone), and seen slow
  const second = installing();
  expect(await settledThisTurn(create('one-slow'))).toBe(true);
  expect(await settledThisTurn(create('two-slow'))).toBe(true);
  expect(await settledThisTurn(create('two-under-way'))).toBe(false);
  expect(await settledThisTurn(() => quick.mkdtemp(path.join(root, '.tmp-')))).toBe(false);
  expect(await settledThisTurn(openNew('opened'))).toBe(false);
  expect(await settledThisTurn(() => quick.lstat(path.join(root, 'alone')))).toBe(true); // no creation: inline
  second();
  second(); // ending twice ends it once
  expect(await settledThisTurn(create('alone-again'))).toBe(true);
  first();
});

it("creates inline again during a burst once the slow creates' back-off is over", async () => {
  await quickUnder([root]);
  slowCreatesAbove(0, 50); // every create is slow; three keep a burst's creates pooled for 50 ms
  const first = installing();
  for (const name of ['one', 'two', 'three'])
    await quick.writeFile(path.join(root, name), 'x', { flag: 'wx' });
  const second = installing();
  await new Promise((resolve) => setTimeout(resolve, 80));
  expect(await settledThisTurn(create('after-the-back-off'))).toBe(true);
  second();
  first();
});
