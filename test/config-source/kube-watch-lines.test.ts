/**
 * bookmarkingWatch on a local server, with a stand-in for the client's classes (the real client is ESM, which jest
 * cannot load; test/hardening/hostile-peers runs it): what a watch line must be before it is parsed.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeClientModule } from '../../src/config-source/kube-client';
import { ConfigMapLister } from '../../src/config-source/kube-list';
import { bookmarkingWatch } from '../../src/config-source/kube-watch';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';

/** The client's classes bookmarkingWatch and kubeCall use, doing nothing but carry the URL. */
const fakeClient = {
  Watch: class {},
  HttpMethod: { GET: 'GET' },
  RequestContext: class {
    getHeaders = (): Record<string, string> => ({});
    getDispatcher = (): undefined => undefined;
  },
} as unknown as KubeClientModule;

const configFor = (server: RunningHttpServer) =>
  ({
    getCurrentCluster: () => ({ server: server.url }),
    applySecurityAuthentication: () => Promise.resolve(),
    getCurrentUser: () => null,
  }) as unknown as KubeConfig;

let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server that answers `body` to every request. */
const serving = async (body: string): Promise<RunningHttpServer> => {
  server = await startHttpServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'application/json' }).end(body);
  });
  return server;
};

const deepArrays = `${'['.repeat(4_000_000)}${']'.repeat(4_000_000)}`;

/** Opens a watch on a server that answers `body`, and resolves with the events passed on and how it ended. */
const watchOf = async (body: string) => {
  const running = await serving(body);
  const events: string[] = [];
  const progress = { wanted: () => true, opened: () => undefined, event: () => undefined };
  const watch = bookmarkingWatch(
    fakeClient,
    () => configFor(running),
    { name: 'models', namespace: 'serving', timeoutSeconds: 10 },
    progress,
  );
  const ended = new Promise<unknown>((resolve) => {
    void watch.watch('/api/v1/namespaces/serving/configmaps', {}, (phase) => events.push(phase), resolve);
  });
  return { events, ended: await ended };
};

describe('bookmarkingWatch', () => {
  it('passes on an event of the ConfigMap and ends cleanly with the answer', async () => {
    const line = JSON.stringify({
      type: 'MODIFIED',
      object: { metadata: { name: 'models', namespace: 'serving' }, data: {} },
    });
    const { events, ended } = await watchOf(`${line}\n`);
    expect(events).toEqual(['MODIFIED']);
    expect(ended).toBeNull();
  });

  it.each([
    [
      'another namespace',
      { name: 'models', namespace: 'elsewhere' },
      'in the namespace "elsewhere", not serving',
    ],
    ['no namespace', { name: 'models' }, 'in the namespace none, not serving'],
  ])(
    'ends the watch at an event of the ConfigMap in %s, which the client would file apart and lose',
    async (_what, metadata, said) => {
      const line = JSON.stringify({ type: 'MODIFIED', object: { metadata, data: {} } });
      const { events, ended } = await watchOf(`${line}\n`);
      expect(events).toEqual([]);
      expect(String(ended)).toContain(`a MODIFIED event of a ConfigMap ${said}`);
    },
  );

  it('refuses a line nested deeper than 64 levels before parsing it (4 million arrays took 2 s and 350 MB)', async () => {
    const line = `{"type":"MODIFIED","object":{"metadata":{"name":"models","namespace":"serving"},"data":${deepArrays}}}`;
    const { events, ended } = await watchOf(`${line}\n`);
    expect(events).toEqual([]);
    expect(String(ended)).toContain('a line nested deeper than 64 levels');
  });

  it('ends the watch at a resourceVersion no API server writes (8 MiB would be shown at /status and sent back)', async () => {
    const versions: unknown[] = [];
    const running = await serving(
      `${JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'models', namespace: 'serving', resourceVersion: '7'.repeat(100_000) } } })}\n`,
    );
    const progress = { wanted: () => true, opened: () => undefined, event: (v: unknown) => versions.push(v) };
    const watch = bookmarkingWatch(
      fakeClient,
      () => configFor(running),
      { name: 'models', namespace: 'serving', timeoutSeconds: 10 },
      progress,
    );
    const events: string[] = [];
    const ended = await new Promise<unknown>((resolve) => {
      void watch.watch('/api/v1/namespaces/serving/configmaps', {}, (phase) => events.push(phase), resolve);
    });
    expect(events).toEqual([]);
    expect(versions).toEqual([]);
    expect(String(ended)).toContain('a MODIFIED event with a resourceVersion no API server writes');
    expect(String(ended).length).toBeLessThan(300);
  });
});

describe('bookmarkingWatch ended early by a proxy', () => {
  /** A watch whose answer a proxy or load balancer ends cleanly, without an event, `afterMs` after it opened. */
  const endedAfter = async (afterMs: number): Promise<unknown> => {
    server = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      setTimeout(() => response.end(), afterMs);
    });
    const running = server;
    const progress = { wanted: () => true, opened: () => undefined, event: () => undefined };
    const watch = bookmarkingWatch(
      fakeClient,
      () => configFor(running),
      { name: 'models', namespace: 'serving', timeoutSeconds: 300 },
      progress,
    );
    return new Promise<unknown>((resolve) => {
      void watch.watch('/api/v1/namespaces/serving/configmaps', {}, () => undefined, resolve);
    });
  };

  it('ends a watch that lasted a while before its connection was closed, long before timeoutSeconds, as one that throttled itself (re-opened at once)', async () => {
    // ListWatch re-opens a watch that ended with a TimeoutError at once; one ended with null after a wait doubling to 30 s.
    expect(await endedAfter(1500)).toMatchObject({ name: 'TimeoutError' });
  });

  it('still ends a watch closed as soon as it opened cleanly (null: ListWatch backs off), so a server that fails fast is not hammered', async () => {
    expect(await endedAfter(0)).toBeNull();
  });
});

describe('ConfigMapLister', () => {
  it('gives a list up at its deadline when its answer drips (a head, then one byte and no more)', async () => {
    const running = (server = await startHttpServer((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' }).write('{"metadata":');
    }));
    const lister = new ConfigMapLister(
      fakeClient,
      { namespace: 'serving', name: 'models' },
      () => undefined,
      300,
    );
    await expect(lister.list(configFor(running), new AbortController().signal)).rejects.toThrow(
      "the API server's list was not answered whole within 300 ms",
    );
  });

  it('refuses a list nested deeper than 64 levels before parsing it, as a watch line', async () => {
    const running = await serving(`{"metadata":{"resourceVersion":"5"},"items":${deepArrays}}`);
    const lister = new ConfigMapLister(fakeClient, { namespace: 'serving', name: 'models' }, () => undefined);
    await expect(lister.list(configFor(running), new AbortController().signal)).rejects.toThrow(
      'nested deeper than 64 levels',
    );
  });

  it.each([
    [
      'an item of another namespace',
      '{"metadata":{"name":"models","namespace":"elsewhere","resourceVersion":"5"}}',
      'a ConfigMap in the namespace "elsewhere", not serving',
    ],
    [
      'the ConfigMap twice',
      '{"metadata":{"name":"models","namespace":"serving"}},{"metadata":{"name":"models","namespace":"serving"}}',
      'holding 2 items',
    ],
  ])('refuses a list holding %s', async (_what, items, said) => {
    const running = await serving(`{"metadata":{"resourceVersion":"5"},"items":[${items}]}`);
    const lister = new ConfigMapLister(fakeClient, { namespace: 'serving', name: 'models' }, () => undefined);
    await expect(lister.list(configFor(running), new AbortController().signal)).rejects.toThrow(said);
  });

  it.each([
    ['the list', `{"metadata":{"resourceVersion":"${'5'.repeat(100_000)}"},"items":[]}`],
    [
      'its item',
      `{"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"models","namespace":"serving","resourceVersion":"5 6"}}]}`,
    ],
  ])('refuses a list when %s has a resourceVersion no API server writes', async (_, body) => {
    const running = await serving(body);
    const lister = new ConfigMapLister(fakeClient, { namespace: 'serving', name: 'models' }, () => undefined);
    const listed = lister.list(configFor(running), new AbortController().signal);
    await expect(listed).rejects.toThrow('a resourceVersion no API server writes');
    await expect(listed).rejects.toThrow(/^.{0,300}$/s);
  });
});
