/** Tests of content sharing over an in-memory store: filling from sources, waiting for a running download, aborts. */
import pino from 'pino';
import type { ModelName } from '../../src/core/model-name';
import { createContentRegistry } from '../../src/loader/content-registry';
import { createContentSharing } from '../../src/loader/content-sharing';
import { noTelemetry, type Filled, type NodeCacheEvent, type Staged } from '../../src/ports';
import { name } from '../helpers/fixtures';
import { atLevel, LogSink } from '../helpers/log-sink';

const [a, b, c, d] = [name('a'), name('b'), name('c'), name('d')];
const filledOnce: Filled = { files: 1, linkedBytes: 0, clonedBytes: 0, copiedBytes: 100 };

const staged = (model: string): Staged => ({
  dir: `/staging/${model}`,
  filling: (signal, fill) => fill(signal),
  commit: () => Promise.reject(new Error('not used')),
  abandon: (cause) => Promise.resolve(cause),
});

/** Sharing over a store whose installed models in `whole` can be filled from; every fill is recorded. */
const sharingWith = (...whole: ModelName[]) => {
  const registry = createContentRegistry();
  const fills: string[] = [];
  const valid = new Set(whole);
  const sharing = createContentSharing({
    registry,
    log: pino({ level: 'silent' }),
    store: {
      fillFrom: (source, into) => {
        fills.push(`${source} into ${into.dir}`);
        return Promise.resolve(valid.has(source) ? filledOnce : undefined);
      },
    },
  });
  return { registry, fills, valid, sharing };
};

const running = (): AbortSignal => new AbortController().signal;

/** True once `promise` has settled, after the turns it needs to (a few macrotasks are plenty here). */
const hasSettled = async (promise: Promise<unknown>): Promise<boolean> => {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
};

describe('createContentSharing', () => {
  it('fills from the most recent model of the identity and makes the model a source once committed', async () => {
    const { registry, fills, sharing } = sharingWith(a, b);
    registry.installed(a, 'id');
    registry.installed(b, 'id');

    const offer = sharing.offer(c, staged('c'), running());
    expect(await offer.reuse('id')).toBe(true);
    offer.settle(true);

    expect(fills).toEqual(['b into /staging/c']);
    expect(offer.filled()).toEqual({ ...filledOnce, source: b });
    expect(registry.sources('id')).toEqual([c, b, a]);
  });

  it('forgets a source the store refuses and fills from the next one', async () => {
    const { registry, fills, sharing } = sharingWith(a);
    registry.installed(a, 'id');
    registry.installed(b, 'id');

    expect(await sharing.offer(c, staged('c'), running()).reuse('id')).toBe(true);

    expect(fills).toEqual(['b into /staging/c', 'a into /staging/c']);
    expect(registry.sources('id')).toEqual([a]);
  });

  it('has the download go on when no model holds the identity and none is downloading it', async () => {
    const { registry, sharing } = sharingWith();

    const offer = sharing.offer(a, staged('a'), running());
    expect(await offer.reuse('id')).toBe(false);
    offer.settle(true);

    expect(offer.filled()).toBeUndefined();
    expect(registry.sources('id')).toEqual([a]);
  });

  it('records nothing for a download that was not committed', async () => {
    const { registry, sharing } = sharingWith();

    const offer = sharing.offer(a, staged('a'), running());
    await offer.reuse('id');
    offer.settle(false);

    expect(registry.sources('id')).toEqual([]);
  });

  it('waits for the download of the same identity running now, then fills from it', async () => {
    const { fills, valid, sharing } = sharingWith();
    const leader = sharing.offer(a, staged('a'), running());
    expect(await leader.reuse('id')).toBe(false);

    const waiting = sharing.offer(b, staged('b'), running()).reuse('id');
    expect(await hasSettled(waiting)).toBe(false);
    valid.add(a);
    leader.settle(true);

    expect(await waiting).toBe(true);
    expect(fills).toEqual(['a into /staging/b']);
  });

  it('has one waiter download when the download it waited for fails, the others waiting for that one', async () => {
    const { valid, sharing } = sharingWith();
    const leader = sharing.offer(a, staged('a'), running());
    await leader.reuse('id');
    const offers = [b, c, d].map((model) => sharing.offer(model, staged(model), running()));
    const answers = offers.map((offer) => offer.reuse('id'));
    const outcome = new Map<number, boolean>();
    answers.forEach((answer, i) => void answer.then((reused) => outcome.set(i, reused)));

    leader.settle(false);
    await hasSettled(Promise.all(answers));
    expect([...outcome.values()]).toEqual([false]);

    const [next] = [...outcome.keys()];
    valid.add([b, c, d][next!]!);
    offers[next!]!.settle(true);
    expect(await Promise.all(answers)).toEqual([0, 1, 2].map((i) => i !== next));
  });

  it('ends a wait with the abort reason when its signal aborts, the download it waited for still leading', async () => {
    const { sharing } = sharingWith();
    const leader = sharing.offer(a, staged('a'), running());
    await leader.reuse('id');
    const stop = new AbortController();

    const waiting = sharing.offer(b, staged('b'), stop.signal).reuse('id');
    stop.abort(new Error('superseded'));

    await expect(waiting).rejects.toThrow('superseded');
    expect(await hasSettled(sharing.offer(c, staged('c'), running()).reuse('id'))).toBe(false);
    await expect(
      sharing.offer(d, staged('d'), AbortSignal.abort(new Error('stopped'))).reuse('id'),
    ).rejects.toThrow('stopped');
  });

  it('neither waits nor records an identity for an offer asked a second time', async () => {
    const { registry, sharing } = sharingWith();
    const other = sharing.offer(a, staged('a'), running());
    await other.reuse('id-2');

    const offer = sharing.offer(b, staged('b'), running());
    expect(await offer.reuse('id-1')).toBe(false);
    expect(await offer.reuse('id-2')).toBe(false);
    offer.settle(true);

    expect(registry.sources('id-1')).toEqual([]);
    expect(registry.sources('id-2')).toEqual([]);
    // It led id-1 all the same: the next offer of id-1 does not wait for it.
    expect(await sharing.offer(c, staged('c'), running()).reuse('id-1')).toBe(false);
  });

  it('fills nothing from a model forgotten since it was installed', async () => {
    const { registry, fills, sharing } = sharingWith(a);
    registry.installed(a, 'id');

    sharing.forget(a);

    expect(await sharing.offer(b, staged('b'), running()).reuse('id')).toBe(false);
    expect(fills).toEqual([]);
  });
});

describe('createContentSharing with a node cache', () => {
  /** Sharing over a store with no installed source and a node cache that answers `take` with `answer`. */
  const withNodeCache = (
    answer: (identity: string, signal: AbortSignal) => Promise<'filled' | 'claimed'>,
    {
      hear = () => undefined,
      published = () => Promise.resolve({ evicted: 2 }),
      sink = new LogSink(),
    }: {
      readonly hear?: (event: NodeCacheEvent) => void;
      readonly published?: () => Promise<{ evicted: number }>;
      readonly sink?: LogSink;
    } = {},
  ) => {
    const calls: string[] = [];
    const heard: NodeCacheEvent[] = [];
    const sharing = createContentSharing({
      log: pino({ level: 'debug' }, sink),
      telemetry: {
        ...noTelemetry,
        nodeCache: (event) => {
          heard.push(event);
          hear(event);
        },
      },
      store: {
        fillFrom: () => Promise.resolve(undefined),
        nodeCache: {
          take: async (identity, into, signal) => {
            calls.push(`take ${identity} into ${into.dir}`);
            if ((await answer(identity, signal)) === 'filled') return { _tag: 'Filled', filled: filledOnce };
            return {
              _tag: 'Claimed',
              publish: () => {
                calls.push(`publish ${identity}`);
                return published();
              },
              release: () => Promise.resolve(void calls.push(`release ${identity}`)),
            };
          },
        },
      },
    });
    return { sharing, calls, heard };
  };

  it('fills from the cache entry when there is one, naming the node cache as the source', async () => {
    const { sharing, calls, heard } = withNodeCache(() => Promise.resolve('filled'));
    const offer = sharing.offer(a, staged('a'), running());
    expect(await offer.reuse('id')).toBe(true);
    offer.settle(true);
    expect(offer.filled()).toEqual({ ...filledOnce, source: 'node cache' });
    expect(calls).toEqual(['take id into /staging/a']);
    expect(heard).toEqual([{ _tag: 'Hit', bytes: 100 }]);
    // A fill is likely: the download asks the identity without a body first (an http HEAD).
    expect(offer.identifyFirst).toBe(true);
    expect(sharingWith(a).sharing.offer(b, staged('b'), running()).identifyFirst).toBe(false);
  });

  it('downloads what it claimed, then publishes it once committed, or releases it when the download failed', async () => {
    const { sharing, calls, heard } = withNodeCache(() => Promise.resolve('claimed'));
    const committed = sharing.offer(a, staged('a'), running());
    expect(await committed.reuse('one')).toBe(false);
    committed.settle(true);
    const failed = sharing.offer(b, staged('b'), running());
    expect(await failed.reuse('two')).toBe(false);
    failed.settle(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual([
      'take one into /staging/a',
      'publish one',
      'take two into /staging/b',
      'release two',
    ]);
    // Two misses, and what the publish evicted.
    expect(heard).toEqual([{ _tag: 'Miss' }, { _tag: 'Evicted', entries: 2 }, { _tag: 'Miss' }]);
  });

  it('fills from the cache and publishes as before when the telemetry throws, and tells each throw as a defect', async () => {
    // An integrator's telemetry: a throw from it was taken for a cache failure (a filled dir downloaded into
    // again), and from the publish in the background it was an unhandled rejection, which ends the process.
    // (Jest fails a test in which a rejection goes unhandled.)
    const sink = new LogSink();
    const hear = (): void => {
      throw new Error('telemetry broke');
    };
    const hit = withNodeCache(() => Promise.resolve('filled'), { hear, sink });
    const filled = hit.sharing.offer(a, staged('a'), running());
    expect(await filled.reuse('one')).toBe(true);
    expect(filled.filled()).toEqual({ ...filledOnce, source: 'node cache' });
    filled.settle(true);

    const claimed = withNodeCache(() => Promise.resolve('claimed'), { hear, sink });
    const committed = claimed.sharing.offer(b, staged('b'), running());
    expect(await committed.reuse('two')).toBe(false);
    committed.settle(true);
    const failing = withNodeCache(() => Promise.resolve('claimed'), {
      sink,
      published: () => Promise.reject(new Error('the lock file is gone')),
    });
    const other = failing.sharing.offer(c, staged('c'), running());
    expect(await other.reuse('three')).toBe(false);
    other.settle(true);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));

    expect(claimed.calls).toEqual(['take two into /staging/b', 'publish two']);
    expect(sink.lines.filter(atLevel('warn'))).toEqual([]);
    expect(sink.lines.filter(atLevel('error')).map((line) => [line.msg, line['model']])).toEqual([
      ['the node cache telemetry threw: a defect; going on', 'a'],
      ['the node cache telemetry threw: a defect; going on', 'b'],
      ['the node cache telemetry threw: a defect; going on', 'b'],
      ['publishing to the node cache threw: a defect', 'c'],
    ]);
  });

  it('asks the cache once per identity in a process: a model of one another model is downloading waits for it', async () => {
    const { sharing, calls } = withNodeCache(() => Promise.resolve('claimed'));
    const leader = sharing.offer(a, staged('a'), running());
    expect(await leader.reuse('id')).toBe(false);
    const follower = sharing.offer(b, staged('b'), running());
    const waiting = follower.reuse('id');
    expect(await hasSettled(waiting)).toBe(false);
    leader.settle(false);
    expect(await waiting).toBe(false);
    expect(calls.filter((call) => call.startsWith('take'))).toEqual([
      'take id into /staging/a',
      'take id into /staging/b',
    ]);
  });

  it('downloads when the cache fails, and stops when the download is aborted while it waits', async () => {
    const { sharing } = withNodeCache(() => Promise.reject(new Error('the cache dir is read-only')));
    expect(await sharing.offer(a, staged('a'), running()).reuse('id')).toBe(false);
    const abort = new AbortController();
    // A cache whose lock never frees: only the abort ends the wait, as lockFile's does.
    const stuck = withNodeCache(
      (_identity, signal) =>
        new Promise((_resolve, reject) => {
          if (signal.aborted) return reject(signal.reason as Error);
          signal.addEventListener('abort', () => reject(signal.reason as Error));
        }),
    );
    const offer = stuck.sharing.offer(b, staged('b'), abort.signal);
    const waiting = offer.reuse('id');
    abort.abort(new Error('superseded'));
    await expect(waiting).rejects.toThrow('superseded');
  });
});
