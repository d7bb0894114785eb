/** Temp dirs for tests: a fresh dir under the OS temp dir, removed with everything in it when the test is done. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Makes a fresh, empty `<os temp dir>/modelsync-<prefix>-XXXXXX`; whoever makes it removes it (`removeTempDir`). */
export const tempDir = (prefix: string): Promise<string> => mkdtemp(join(tmpdir(), `modelsync-${prefix}-`));

/** Removes `dir` and everything in it; nothing happens when it is gone already. */
export const removeTempDir = (dir: string): Promise<void> => rm(dir, { recursive: true, force: true });

/**
 * For a test file or describe block: a fresh temp dir before each test, removed after it. Read `.path` inside
 * the test or in a `beforeEach` declared after this call (hooks run in the order they are declared).
 */
export const useTempDir = (prefix: string): { readonly path: string } => {
  let current: string | undefined;
  beforeEach(async () => {
    current = await tempDir(prefix);
  });
  afterEach(async () => {
    if (current !== undefined) await removeTempDir(current);
    current = undefined;
  });
  return {
    get path(): string {
      if (current === undefined) throw new Error('useTempDir: the temp dir exists only while a test runs');
      return current;
    },
  };
};
