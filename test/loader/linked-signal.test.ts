/** Tests of linkedSignal: follows its source while linked, leaves nothing behind in the source once disposed. */
import { getEventListeners } from 'node:events';
import pino from 'pino';
import { linkedSignal } from '../../src/loader/linked-signal';
import { reconcile, type ModelState } from '../../src/loader/reconcile';
import { createSlots } from '../../src/core/slots';
import { name, spec } from '../helpers/fixtures';
import { recordingPorts } from './recording-ports';

describe('linkedSignal', () => {
  it('aborts with the reason of its source', () => {
    const source = new AbortController();
    const { signal } = linkedSignal(source.signal);
    expect(signal.aborted).toBe(false);
    source.abort(new Error('shutting down'));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toEqual(new Error('shutting down'));
  });

  it('is aborted at once when its source already is', () => {
    const { signal } = linkedSignal(AbortSignal.abort('gone'));
    expect([signal.aborted, signal.reason]).toEqual([true, 'gone']);
  });

  it('no longer follows its source once disposed, and leaves no listener on it', () => {
    const source = new AbortController();
    const linked = Array.from({ length: 1000 }, () => linkedSignal(source.signal));
    // One listener for all of them: no leak warning at caps 64/64 (128 steps at once).
    expect(getEventListeners(source.signal, 'abort')).toHaveLength(1);
    for (const { dispose } of linked) dispose();
    expect(getEventListeners(source.signal, 'abort')).toHaveLength(0);
    source.abort();
    expect(linked.some(({ signal }) => signal.aborted)).toBe(false);
  });

  it('aborts every signal still linked, with the reason, and keeps following after some are disposed', () => {
    const source = new AbortController();
    const linked = Array.from({ length: 5 }, () => linkedSignal(source.signal));
    linked[0]!.dispose();
    const late = linkedSignal(source.signal);
    source.abort('shutdown');
    expect(linked.map(({ signal }) => signal.aborted)).toEqual([false, true, true, true, true]);
    expect(late.signal.reason).toBe('shutdown');
    expect(getEventListeners(source.signal, 'abort')).toHaveLength(0);
  });
});

describe('reconcile, through linkedSignal', () => {
  it("hands the server a signal of the step, never the run's long-lived one, and leaves no listener on it", async () => {
    const stop = new AbortController();
    const { ports } = recordingPorts();
    const seen: AbortSignal[] = [];
    const server = {
      ...ports.server,
      load: (model: string, replacing: boolean, signal: AbortSignal) => {
        seen.push(signal);
        return ports.server.load(model as never, replacing, signal);
      },
      unload: (model: string, signal: AbortSignal) => {
        seen.push(signal);
        return ports.server.unload(model as never, signal);
      },
    };
    const effects = {
      ...ports,
      server,
      slots: { download: createSlots(1), load: createSlots(1) },
      log: pino({ level: 'silent' }),
      report: () => undefined,
    };
    const state: ModelState = { name: name('m1'), onDisk: undefined, loaded: false, loadedSpec: undefined };
    const signals = { stop: stop.signal, supersede: new AbortController().signal };
    await reconcile(state, spec('/models/v1'), effects, signals);
    await reconcile(state, undefined, effects, signals);
    expect(seen).toHaveLength(2);
    expect(seen.some((signal) => signal === stop.signal)).toBe(false);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});
