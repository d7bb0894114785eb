/**
 * Tests of the loader with many models of one stored content, on a real model dir: the content is downloaded once
 * and every other model is filled from the first, each in a dir of its own with files and a marker of its own.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import { from, lastValueFrom, Subject, toArray } from 'rxjs';
import { retryableError } from '../../src/core/errors';
import type { ModelName } from '../../src/core/model-name';
import { add, remove, type ModelOp } from '../../src/core/model-op';
import { createLoader, type Loader } from '../../src/loader/loader';
import { modelDirStore } from '../../src/model-dir/store';
import type { DownloadFunction } from '../../src/ports';
import { waitFor } from '../../src/testing/wait';
import { name, spec } from '../helpers/fixtures';
import { overwriteInPlace } from '../helpers/file-tree';
import { LogSink, type LogLine } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { recordingPorts } from './recording-ports';

const tmp = useTempDir('same-content');
const shared = spec('http://store.example/model.bin');
const content = 'weights of the shared model';
const names = Array.from({ length: 10 }, (_, i) => name(`model-${i}`));

/**
 * A store whose one object is named `etag-1` to `reuse`, and is fetched (taking `fetchMs`) only when reuse says
 * no; the first `failing` fetches fail after that time with a connection reset.
 */
const storage = ({ fetchMs = 30, failing = 0 } = {}) => {
  let fetches = 0;
  const download: DownloadFunction = async (_uri, dir, signal, progress, request) => {
    if ((await request?.reuse?.('etag-1')) === true) return;
    fetches++;
    await delay(fetchMs, undefined, { signal });
    if (fetches <= failing) throw retryableError('network', 'connection reset');
    await writeFile(join(dir, 'model.bin'), content);
    progress?.({ bytes: content.length, elapsedMs: fetchMs, bytesPerSecond: 1000, done: true });
  };
  return { download, fetches: () => fetches };
};

/**
 * A loader with four download slots over a real model dir, an in-memory journal and server (each load first awaits
 * `beforeLoad`), and `download`.
 */
const loaderOn = async (
  download: DownloadFunction,
  { loadConcurrency = 2, beforeLoad = (): Promise<void> => Promise.resolve() } = {},
): Promise<{ loader: Loader; root: string; sink: LogSink }> => {
  const root = join(tmp.path, 'models');
  await mkdir(root, { recursive: true });
  const sink = new LogSink();
  const log = pino({ level: 'info' }, sink);
  const { ports } = recordingPorts();
  const loader = createLoader(
    {
      ...ports,
      server: {
        ...ports.server,
        load: async (...args) => {
          await beforeLoad();
          return ports.server.load(...args);
        },
      },
      store: modelDirStore({ root, log }),
      download,
      log,
      downloadConcurrency: 4,
      loadConcurrency,
      retry: { baseMs: 5, maxMs: 20, maxAttempts: 3 },
    },
    { onDisk: new Map(), loaded: new Set() },
  );
  return { loader, root, sink };
};

/** Runs `ops` to the end: the run completes once their work is done. */
const apply = (loader: Loader, ops: ReadonlyArray<ModelOp>) =>
  lastValueFrom(loader.run(from(ops)).pipe(toArray()));
const phaseOf = (loader: Loader, model: ModelName) => loader.statuses().get(model)?.phase;
const inode = async (path: string): Promise<number> => (await stat(path)).ino;
const markersOf = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((entry) => entry.startsWith('SUCCESS.'));

describe('createLoader with models of one content', () => {
  it('downloads ten models of one content once, with four slots, filling the other nine from the first', async () => {
    const store = storage();
    const { loader, root, sink } = await loaderOn(store.download);

    await apply(
      loader,
      names.map((model) => add(model, shared)),
    );

    expect(store.fetches()).toBe(1);
    expect(names.map((model) => phaseOf(loader, model))).toEqual(names.map(() => 'Loaded'));
    // The three that started beside the download waited for it in their slots, not past them.
    expect(loader.slots.download.highWater()).toBe(4);
    const inodes = new Set<number>();
    for (const model of names) {
      expect(await readFile(join(root, model, 'model.bin'), 'utf8')).toBe(content);
      inodes.add(await inode(join(root, model, 'model.bin')));
      expect(await markersOf(join(root, model))).toHaveLength(1);
    }
    // Each its own copy (a clone where the file system has them): no write to one reaches another.
    expect(inodes.size).toBe(names.length);
    expect((await readdir(root)).filter((entry) => entry.startsWith('.'))).toEqual([]);
    const filled = sink.withMessage('model filled from another model');
    expect(filled).toHaveLength(9);
    const placed = (line: LogLine): unknown => [
      line['linkedBytes'],
      Number(line['clonedBytes']) + Number(line['copiedBytes']),
    ];
    expect(filled.map(placed)).toEqual(filled.map(() => [0, content.length]));
    const loaded = sink.withMessage('model loaded');
    expect(loaded.filter((line) => line['bytes'] === content.length)).toHaveLength(1);
    expect(
      loaded.filter((line) => line['filledBytes'] === content.length && !('bytes' in line)),
    ).toHaveLength(9);
  });

  it('changes no other model of the content when one model file is made writable and written in place', async () => {
    const store = storage();
    const { loader, root } = await loaderOn(store.download);
    await apply(
      loader,
      names.map((model) => add(model, shared)),
    );

    // The model that downloaded, and one that was filled: a write through either stays in its own dir.
    await overwriteInPlace(join(root, names[0]!, 'model.bin'));
    await overwriteInPlace(join(root, names[5]!, 'model.bin'));

    const now = await Promise.all(names.map((model) => readFile(join(root, model, 'model.bin'), 'utf8')));
    const overwritten = '!'.repeat(content.length);
    expect(now).toEqual(names.map((_, i) => (i === 0 || i === 5 ? overwritten : content)));
  });

  it('lets the models waiting for a download fill while the downloaded one holds the only load slot', async () => {
    const store = storage();
    let firstLoad = true;
    let filled = (): number => 0;
    let waitedOut = false;
    // The first load (the downloaded model's) returns only once the three that waited in the other download slots
    // are filled: they wait for its commit, not for its load. (A fourth may fill in the fifth worker; any more would
    // need a worker, and all five are busy.)
    const beforeLoad = async (): Promise<void> => {
      if (!firstLoad) return;
      firstLoad = false;
      await waitFor(() => filled() >= 3, 5_000).catch(() => (waitedOut = true));
    };
    const { loader, sink } = await loaderOn(store.download, { loadConcurrency: 1, beforeLoad });
    filled = () => sink.withMessage('model filled from another model').length;

    await apply(
      loader,
      names.map((model) => add(model, shared)),
    );

    expect(waitedOut).toBe(false);
    expect(store.fetches()).toBe(1);
    expect(names.map((model) => phaseOf(loader, model))).toEqual(names.map(() => 'Loaded'));
  });

  it('has one waiting model download when the download it waited for fails, the rest filled from that one', async () => {
    const store = storage({ failing: 1 });
    const { loader } = await loaderOn(store.download);

    await apply(
      loader,
      names.map((model) => add(model, shared)),
    );

    expect(store.fetches()).toBe(2);
    expect(names.map((model) => phaseOf(loader, model))).toEqual(names.map(() => 'Loaded'));
  });

  it('downloads again once the only model holding the content was removed', async () => {
    const store = storage();
    const { loader, root } = await loaderOn(store.download);
    const [first, second] = [names[0]!, names[1]!];

    await apply(loader, [add(first, shared)]);
    await apply(loader, [remove(first)]);
    await apply(loader, [add(second, shared)]);

    expect(store.fetches()).toBe(2);
    expect(await readdir(root)).toEqual([second]);
  });

  it('leaves no staging dir and no waiting download behind when unsubscribed while models wait', async () => {
    const store = storage({ fetchMs: 60_000 });
    const { loader, root } = await loaderOn(store.download);
    const ops$ = new Subject<ModelOp>();
    const subscription = loader.run(ops$).subscribe();
    names.forEach((model) => ops$.next(add(model, shared)));
    await waitFor(async () => (await readdir(root)).length === 4);
    await waitFor(() => store.fetches() === 1); // the first download runs: the others wait for it

    subscription.unsubscribe();

    await waitFor(async () => (await readdir(root)).length === 0);
    expect(store.fetches()).toBe(1);
    await waitFor(() => loader.slots.download.inUse() === 0);
  });
});
