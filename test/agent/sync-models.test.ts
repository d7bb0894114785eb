/** syncModels: when the first accepted config counts as applied (Ready), while later configs keep the loader busy. */
import pino from 'pino';
import { BehaviorSubject, Observable, Subject, of, tap, type Subscription } from 'rxjs';
import * as E from 'fp-ts/Either';
import { add, remove, type ModelOp } from '../../src/core/model-op';
import { statusEvent, type AgentEvent, type ModelPhase } from '../../src/core/model-status';
import { inPlaceSnapshot, installedInForce } from '../../src/core/in-place';
import { emptySnapshot, type Snapshot } from '../../src/core/snapshot';
import type { ConfigSource, FsEvent } from '../../src/ports';
import { syncModels } from '../../src/agent';
import { waitFor } from '../../src/testing/wait';
import { modelsJson, name, snap, spec } from '../helpers/fixtures';

/** A config dir whose models.json is `text` until `swap` puts another there (with kubelet's `..data` event). */
const changingConfig = (text: string) => {
  let current = text;
  const events$ = new Subject<FsEvent>();
  const source: ConfigSource = {
    events$,
    read: () => of(E.right({ file: '/config/models.json', text: current })),
  };
  const swap = (next: string): void => {
    current = next;
    events$.next({ event: 'rename', name: '..data' });
  };
  return { source, swap };
};

/** A loader whose models move only when the test says: `settle` ends one with a phase; busy while any is open. */
const handDrivenLoader = () => {
  const open = new Set<string>();
  const idle$ = new BehaviorSubject(true);
  let emit: ((event: AgentEvent) => void) | undefined;
  const settle = (model: string, phase: ModelPhase): void => {
    open.delete(model);
    emit?.(statusEvent({ modelName: name(model), phase }));
    idle$.next(open.size === 0);
  };
  const run = (op$: Observable<ModelOp>): Observable<AgentEvent> =>
    new Observable<AgentEvent>((subscriber) => {
      emit = (event) => subscriber.next(event);
      const ops: Subscription = op$.subscribe((op) => {
        open.add(op.modelName);
        idle$.next(false);
        subscriber.next(statusEvent({ modelName: op.modelName, phase: 'Pending' }));
      });
      return () => ops.unsubscribe();
    });
  return { loader: { run, idle$ }, settle, open };
};

/** syncModels on `config` and a hand-driven loader: the events it emits, and how to settle the loader's models. */
const synced = (
  config: ReturnType<typeof changingConfig>,
  start: { readonly inPlace: Snapshot; readonly installed?: Snapshot } = { inPlace: emptySnapshot },
) => {
  const { loader, settle, open } = handDrivenLoader();
  const events: AgentEvent[] = [];
  const ops: ModelOp[] = [];
  const subscription = syncModels({
    configSource: config.source,
    ...start,
    log: pino({ level: 'silent' }),
    settleMs: 1,
    loader,
    opOperators: [tap((op) => ops.push(op))],
  }).subscribe((event) => events.push(event));
  return { events, subscription, settle, open, ops };
};

describe('syncModels', () => {
  it('emits Ready once the first config is applied, though a model a later config added is still downloading', async () => {
    const config = changingConfig(modelsJson({ a: '/storage/a' }));
    const { events, subscription, settle, open } = synced(config);
    try {
      await waitFor(() => open.has('a'), 5_000, 'the first config reaches the loader');
      config.swap(modelsJson({ a: '/storage/a', b: '/storage/b' }));
      await waitFor(() => open.has('b'), 5_000, 'the second config reaches the loader');
      settle('a', 'Loaded'); // the first config is applied; b (a big model, say) downloads for an hour yet
      await waitFor(() => events.some((event) => event._tag === 'Ready'), 5_000, 'Ready');
      expect(events.filter((event) => event._tag === 'Ready')).toEqual([{ _tag: 'Ready', modelCount: 1 }]);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('waits for every model of the first config, loaded or failed, and not for one a later config removed', async () => {
    const config = changingConfig(modelsJson({ a: '/storage/a', b: '/storage/b', c: '/storage/c' }));
    const { events, subscription, settle, open } = synced(config);
    const ready = (): boolean => events.some((event) => event._tag === 'Ready');
    try {
      await waitFor(() => open.size === 3, 5_000, 'the first config reaches the loader');
      config.swap(modelsJson({ a: '/storage/a', b: '/storage/b', d: '/storage/d' }));
      await waitFor(() => open.has('d'), 5_000, 'the second config reaches the loader');
      settle('a', 'Loaded');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(ready()).toBe(false); // b is not done yet
      settle('b', 'Failed');
      await waitFor(ready, 5_000, 'Ready'); // c was removed by the second config: nothing of it is awaited
      expect(open.has('d')).toBe(true);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('emits Ready at once for a first config that asks for nothing, and once only', async () => {
    const config = changingConfig('[]');
    const { events, subscription } = synced(config);
    try {
      await waitFor(() => events.some((event) => event._tag === 'Ready'), 5_000, 'Ready');
      config.swap(modelsJson({ a: '/storage/a' }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(events.filter((event) => event._tag === 'Ready')).toEqual([{ _tag: 'Ready', modelCount: 0 }]);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('keeps the models installed before a restart in force while the first config read is rejected: loads the one the server lost, then Ready', async () => {
    // A restart (modelsync's container, and the server's, which forgot its models) while models.json is bad.
    const config = changingConfig('[{"modelName": "a", ');
    // b is still loaded, a is not; x is loaded with nothing of modelsync's on disk: a bad config unloads nothing.
    const found = {
      onDisk: snap({ a: spec('/storage/a'), b: spec('/storage/b') }),
      loaded: new Set(['b', 'x']),
    };
    const start = { inPlace: inPlaceSnapshot(found), installed: installedInForce(found) };
    const { events, subscription, settle, open, ops } = synced(config, start);
    try {
      await waitFor(() => open.has('a'), 5_000, 'the model installed before the restart reaches the loader');
      expect(ops).toEqual([add(name('a'), spec('/storage/a'), true)]);
      settle('a', 'Loaded');
      await waitFor(() => events.some((event) => event._tag === 'Ready'), 5_000, 'Ready');
      // The next good config is diffed against the models kept in force: x goes as by any first config.
      config.swap(modelsJson({ b: { storageUri: '/storage/b', framework: 'sklearn' } }));
      await waitFor(() => ops.length === 3, 5_000, 'the next good config');
      expect(ops.slice(1)).toEqual([remove(name('a')), remove(name('x'))]);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('does nothing while the first config read is rejected when nothing was installed before the start', async () => {
    const config = changingConfig('[');
    const { events, subscription, ops } = synced(config, {
      inPlace: emptySnapshot,
      installed: emptySnapshot,
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(ops).toEqual([]);
      expect(events).toEqual([]);
    } finally {
      subscription.unsubscribe();
    }
  });
});
