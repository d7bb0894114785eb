/**
 * httpStorage's identity from a HEAD (`identifyFirst`, asked when a node cache is on): a hit moves no byte of the
 * body, a server that answers no HEAD is asked by its GET as before, and a GET of another version than the HEAD's
 * fails (its bytes would be published under the HEAD's identity).
 */
import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { httpStorage } from '../../../src/storage/http/http-storage';
import { rangedBody } from '../../../src/testing/ranged-body';
import { effectError } from '../../helpers/effect-error';
import { useHttpServers } from '../../helpers/http-servers';
import { useTempDir } from '../../helpers/temp-dir';

const never = new AbortController().signal;
const size = 1024 * 1024;

/** An offer that records each identity it is offered and answers `fills`. */
const offering = (fills: boolean) => {
  const offered: string[] = [];
  const reuse = (identity: string): Promise<boolean> => {
    offered.push(identity);
    return Promise.resolve(fills);
  };
  return { offered, reuse };
};

describe('httpStorage asked to identify first', () => {
  const startServer = useHttpServers();
  const tmp = useTempDir('http-identify');
  let target: string;
  beforeEach(async () => {
    target = path.join(tmp.path, 'target');
    await mkdir(target);
  });

  it('offers the identity from a HEAD and, filled, sends no GET: no byte of the body', async () => {
    const body = rangedBody({ size, etag: '"v1"' });
    const { url } = await startServer(body.handle);
    const { offered, reuse } = offering(true);
    const written = await httpStorage().download(`${url}/m.bin`, target, never, undefined, {
      identifyFirst: true,
      reuse,
    });
    expect(written).toBeUndefined();
    expect(body.requests.map((r) => r.method)).toEqual(['HEAD']);
    expect(body.sentBytes()).toBe(0);
    expect(offered).toEqual([`http ${url}/m.bin "v1" ${size} `]);
  });

  it('downloads with one GET when the offer does not fill, offering nothing twice', async () => {
    const body = rangedBody({ size, etag: '"v1"' });
    const { url } = await startServer(body.handle);
    const { offered, reuse } = offering(false);
    await httpStorage({ streams: 1 }).download(`${url}/m.bin`, target, never, undefined, {
      identifyFirst: true,
      reuse,
    });
    expect(body.requests.map((r) => r.method)).toEqual(['HEAD', 'GET']);
    expect(offered).toHaveLength(1);
    expect((await stat(path.join(target, 'm.bin'))).size).toBe(size);
  });

  it('asks the GET when the server answers no HEAD (a presigned GET URL refuses it)', async () => {
    const body = rangedBody({ size, etag: '"v1"' });
    const { url } = await startServer((req, res) => {
      if (req.method === 'HEAD') res.writeHead(403).end();
      else body.handle(req, res);
    });
    const { offered, reuse } = offering(true);
    const written = await httpStorage().download(`${url}/m.bin`, target, never, undefined, {
      identifyFirst: true,
      reuse,
    });
    expect(written).toBeUndefined();
    expect(offered).toEqual([`http ${url}/m.bin "v1" ${size} `]);
    expect(await readdir(target)).toEqual([]);
  });

  it('fails as changed, retryable, when the GET answers another version than the HEAD', async () => {
    const body = rangedBody({ size, etag: '"v1"' });
    const { url } = await startServer((req, res) => {
      body.handle(req, res);
      if (req.method === 'HEAD') body.change('"v2"');
    });
    const error = await effectError(
      httpStorage().download(`${url}/m.bin`, target, never, undefined, {
        identifyFirst: true,
        reuse: () => Promise.resolve(false),
      }),
    );
    expect(error).toMatchObject({ kind: 'changed', retryable: true });
    expect(error.message).toContain('another version than its HEAD');
    expect(await readdir(target)).toEqual([]);
  });

  it("drops the GET's body unread when the offer fills it, leaving no error unhandled", async () => {
    // A small body, come whole before it is dropped: undici then fails it with an error nobody listens for.
    const body = rangedBody({ size: 10 * 1024, etag: '"v1"' });
    const { url } = await startServer(body.handle);
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): number => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const { offered, reuse } = offering(true);
      const written = await httpStorage().download(`${url}/m.bin`, target, never, undefined, { reuse });
      // undici fails a body destroyed unread a turn later (setImmediate): wait for that turn and one more.
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(written).toBeUndefined();
      expect(offered).toHaveLength(1);
      expect(await readdir(target)).toEqual([]);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('sends no HEAD unless asked', async () => {
    const body = rangedBody({ size, etag: '"v1"' });
    const { url } = await startServer(body.handle);
    await httpStorage().download(`${url}/m.bin`, target, never, undefined, {
      reuse: () => Promise.resolve(false),
    });
    expect(body.requests.map((r) => r.method)).not.toContain('HEAD');
  });
});
