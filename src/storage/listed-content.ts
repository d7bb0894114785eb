/**
 * What a listing says of a file's bytes (its size, and a digest when the listing gives one), and the check that a
 * body, however it was framed, or a file written in parts, is exactly those bytes.
 */
import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { retryableError, type EffectError } from '../core/errors';
import { fsError, readNoFollow } from '../fs';

/**
 * A digest a listing gives of a file: the Hub's LFS `oid` (the sha256 of the bytes), or a small file's git blob id
 * (the sha1 of `blob <size>\0` and the bytes), both hex.
 */
export interface ContentDigest {
  readonly algorithm: 'sha256' | 'git-blob-sha1';
  readonly hex: string;
}

const digestNames = { sha256: 'sha256', 'git-blob-sha1': 'git blob id' } as const;

/**
 * One file's bytes held to its listing's `size` and `digest`: a body read as one stream (maybe resumed) passes `pass`
 * then `verify`; a file written in ranged parts is read back by `verifyFile`. For a `pinned` listing (one commit of a
 * repo) each failure is `invalid-response`: a CDN, a proxy or a mirror broke the file, and a later attempt may meet an
 * honest one. Otherwise (a bucket's listing of the moment) a longer body is `changed` (list again), a shorter one
 * `network` (resume). `failed` is set by the failures no resume can mend.
 */
export class ContentCheck {
  private readonly hash: Hash | undefined;
  /** The bytes passed so far. */
  bytes = 0;
  failed: EffectError | undefined;

  constructor(
    private readonly what: string,
    private readonly size: number,
    private readonly digest: ContentDigest | undefined,
    private readonly pinned: boolean,
  ) {
    this.hash = digest === undefined ? undefined : newHash(digest, size);
  }

  /** `source`, counted and hashed as it streams, cut with a failure at the first byte past the listed size. */
  async *pass(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      if (chunk.byteLength > this.size - this.bytes) {
        throw this.pinned
          ? this.notListed(`it goes on past the ${this.size} bytes listed`)
          : (this.failed = retryableError(
              'changed',
              `${this.what} is longer than the ${this.size} bytes listed`,
            ));
      }
      this.bytes += chunk.byteLength;
      this.hash?.update(chunk);
      yield chunk;
    }
  }

  /** After `pass` has seen the whole body: fails unless it brought the listed size and digest. */
  verify(): void {
    if (this.bytes !== this.size) {
      if (!this.pinned)
        throw retryableError('network', `${this.what} ended after ${this.bytes} of ${this.size} bytes`);
      throw this.notListed(`it ended after ${this.bytes} of the ${this.size} bytes listed`);
    }
    this.compare(this.hash);
  }

  /** Reads `path` (never through a link) and fails unless its bytes have the listed digest; no digest, no read. */
  async verifyFile(path: string, signal: AbortSignal): Promise<void> {
    if (this.digest === undefined) return;
    const hash = newHash(this.digest, this.size);
    const file = await open(path, readNoFollow).catch((cause: unknown) => {
      throw fsError(`${this.what}: cannot read ${path} back`, cause);
    });
    try {
      for await (const chunk of file.createReadStream({ highWaterMark: 2 ** 20, autoClose: false, signal })) {
        hash.update(chunk as Buffer);
      }
    } catch (cause) {
      throw signal.aborted ? cause : fsError(`${this.what}: cannot read ${path} back`, cause);
    } finally {
      await file.close();
    }
    this.compare(hash);
  }

  private compare(hash: Hash | undefined): void {
    const { digest } = this;
    if (hash === undefined || digest === undefined) return;
    const actual = hash.digest('hex');
    if (actual !== digest.hex.toLowerCase()) {
      const name = digestNames[digest.algorithm];
      throw this.notListed(`its ${name} is ${actual}, the listing says ${digest.hex}`);
    }
  }

  private notListed(why: string): EffectError {
    return (this.failed = retryableError(
      'invalid-response',
      `${this.what}: the server's answer is not the file its listing names: ${why}`,
    ));
  }
}

const newHash = (digest: ContentDigest, size: number): Hash =>
  digest.algorithm === 'sha256' ? createHash('sha256') : createHash('sha1').update(`blob ${size}\u0000`);
