/** Tests of durable-fs's shared steps: the one fs classifier, and streaming into new files. */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { permanentError } from '../../src/core/errors';
import { consume, fsError, isTransientFsError, writeNewFile } from '../../src/fs/durable-fs';
import { effectError } from '../helpers/effect-error';
import { useTempDir } from '../helpers/temp-dir';

const errno = (code: string): Error => Object.assign(new Error(`${code}: something, open '/m'`), { code });

describe('fsError', () => {
  it.each(['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'ENOMEM', 'EINTR', 'ESTALE'])(
    'makes %s a retryable filesystem error',
    (code) => {
      expect(isTransientFsError(errno(code))).toBe(true);
      expect(fsError('cannot write /m', errno(code))).toMatchObject({ kind: 'filesystem', retryable: true });
    },
  );

  it.each(['ENOENT', 'EACCES', 'EPERM', 'EEXIST', 'ENOTDIR', 'EISDIR', 'EROFS', 'ELOOP', 'EXDEV'])(
    'makes %s a permanent filesystem error',
    (code) => {
      expect(isTransientFsError(errno(code))).toBe(false);
      expect(fsError('cannot write /m', errno(code))).toMatchObject({ kind: 'filesystem', retryable: false });
    },
  );

  it('names what failed, then the cause', () => {
    const cause = errno('EACCES');
    expect(fsError('cannot write /m', cause)).toMatchObject({
      message: "cannot write /m: EACCES: something, open '/m'",
      cause,
    });
  });

  it('passes an EffectError through, and makes an abort aborted and anything else unknown', () => {
    const classified = permanentError('refused', 'no');
    expect(fsError('x', classified)).toBe(classified);
    expect(fsError('x', new DOMException('stop', 'AbortError'))).toMatchObject({
      kind: 'aborted',
      retryable: true,
    });
    expect(fsError('x', new Error('boom'))).toMatchObject({
      kind: 'unknown',
      retryable: true,
      message: 'x: boom',
    });
  });
});

describe('consume and writeNewFile', () => {
  const tmp = useTempDir('durable');
  const never = new AbortController().signal;

  const bytes = (...parts: string[]): AsyncIterable<Uint8Array> =>
    Readable.from(parts.map((part) => Buffer.from(part)));

  it('writes every chunk into a new file', async () => {
    await writeNewFile(bytes('a', 'bc', ''), path.join(tmp.path, 'f'), never, 'saving f');
    expect(await readFile(path.join(tmp.path, 'f'), 'utf8')).toBe('abc');
  });

  it('never replaces a file: a second write of one name is a permanent filesystem error', async () => {
    await writeFile(path.join(tmp.path, 'f'), 'first');
    const error = await effectError(
      writeNewFile(bytes('second'), path.join(tmp.path, 'f'), never, 'saving f'),
    );
    expect(error).toMatchObject({ kind: 'filesystem', retryable: false });
    expect(error.message).toMatch(/^saving f: EEXIST/);
    expect(await readFile(path.join(tmp.path, 'f'), 'utf8')).toBe('first');
  });

  it('passes a failure of the source through as it was', async () => {
    const lost = new Error('terminated');
    async function* breaking(): AsyncGenerator<Uint8Array> {
      yield* bytes('a');
      throw lost;
    }
    await expect(writeNewFile(breaking(), path.join(tmp.path, 'f'), never, 'saving f')).rejects.toBe(lost);
  });

  it('classifies a failure of the sink', async () => {
    const classify = jest.fn(() => permanentError('invalid-archive', 'bad'));
    const sink = (): Promise<void> => Promise.reject(new Error('corrupt'));
    await expect(consume(bytes('a'), never, sink, classify)).rejects.toMatchObject({
      kind: 'invalid-archive',
    });
    expect(classify).toHaveBeenCalledWith(new Error('corrupt'));
  });

  it('stops reading a source that ignores the signal as soon as it aborts, classifying nothing', async () => {
    const controller = new AbortController();
    async function* stuck(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('a');
      await new Promise(() => undefined);
    }
    const classify = jest.fn((cause: unknown) => cause);
    const done = consume(
      stuck(),
      controller.signal,
      async (chunks) => {
        for await (const chunk of chunks) if (chunk.length > 0) controller.abort(new Error('stop'));
      },
      classify,
    );
    await expect(done).rejects.toThrow('stop');
    expect(classify).not.toHaveBeenCalled();
  });
});
