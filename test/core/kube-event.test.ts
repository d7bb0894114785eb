/** Kubernetes Events of the agent's Pod: which agent events make one, the Event object, client-go's correlation. */
import {
  configRejectedEvent,
  EventCorrelator,
  eventBurst,
  eventObject,
  kubeEventOf,
  maxEventMessageChars,
  maxSimilar,
  refillMs,
  repeatWindowMs,
  type KubeEventNote,
} from '../../src/core/kube-event';
import { statusEvent, readyEvent, type ModelPhase } from '../../src/core/model-status';
import { name } from '../helpers/fixtures';

const status = (phase: ModelPhase, extra: object = {}) =>
  statusEvent({ modelName: name('iris'), phase, ...extra });

describe('kubeEventOf', () => {
  it.each<[ModelPhase, object, KubeEventNote | undefined]>([
    [
      'Loaded',
      { spec: { storageUri: 's3://models/iris' } },
      { reason: 'ModelLoaded', type: 'Normal', message: 'model iris loaded from s3://models/iris' },
    ],
    [
      'Removed',
      {},
      {
        reason: 'ModelUnloaded',
        type: 'Normal',
        message: 'model iris is no longer listed: unloaded, its files removed',
      },
    ],
    [
      'Failed',
      { reason: 'no such object' },
      { reason: 'ModelFailed', type: 'Warning', message: 'model iris failed: no such object' },
    ],
    ['Downloading', {}, undefined],
    ['Retrying', { reason: 'timeout' }, undefined],
  ])('makes a %s status %j into %j', (phase, extra, expected) => {
    expect(kubeEventOf(status(phase, extra))).toEqual(expected);
  });

  it('makes nothing of Ready', () => {
    expect(kubeEventOf(readyEvent(3))).toBeUndefined();
  });

  it('never carries a credential, and cuts a long message to one line a reader takes in', () => {
    const signed = kubeEventOf(
      status('Loaded', { spec: { storageUri: 'https://user:secret@host/m?sig=abc' } }),
    );
    expect(signed?.message).toBe('model iris loaded from https://host/m');
    // A URI the text's URL shape stops short of (a space in its path): its query went out whole, where /status and
    // the log show the URI without it (found by a probe).
    const spaced = kubeEventOf(
      status('Loaded', { spec: { storageUri: 'https://host/my model/m.bin?X-Custom-Token=abc123' } }),
    );
    expect(spaced?.message).toBe('model iris loaded from https://host/my model/m.bin');
    const long = configRejectedEvent('x'.repeat(5000));
    expect(long.message).toHaveLength(maxEventMessageChars);
    expect(long.message.endsWith('…')).toBe(true);
  });
});

describe('eventObject', () => {
  it('is a v1 Event about the Pod, from modelsync, first and last seen at once', () => {
    const event = eventObject(
      { name: 'pod-1', namespace: 'ns' },
      'pod-1.abc',
      configRejectedEvent('bad JSON'),
      0,
    );
    expect(event).toEqual({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'pod-1.abc', namespace: 'ns' },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'pod-1', namespace: 'ns' },
      reason: 'ConfigRejected',
      message: 'config rejected; keeping the previous models: bad JSON',
      type: 'Warning',
      source: { component: 'modelsync' },
      reportingComponent: 'modelsync',
      reportingInstance: 'pod-1',
      firstTimestamp: '1970-01-01T00:00:00Z',
      lastTimestamp: '1970-01-01T00:00:00Z',
      count: 1,
    });
  });

  it("names the Pod's uid when known: `kubectl describe pod` selects its events by it", () => {
    const pod = { name: 'pod-1', namespace: 'ns', uid: '6f1c2d3e-0000-4000-8000-000000000001' };
    const event = eventObject(pod, 'pod-1.abc', configRejectedEvent('bad JSON'), 0);
    expect(event).toMatchObject({
      involvedObject: { apiVersion: 'v1', kind: 'Pod', name: 'pod-1', namespace: 'ns', uid: pod.uid },
    });
  });
});

describe('EventCorrelator', () => {
  const loaded = kubeEventOf(status('Loaded'))!;
  const failed = kubeEventOf(status('Failed', { reason: 'gone' }))!;
  let names = 0;
  const fresh = () => `e${++names}`;
  beforeEach(() => (names = 0));

  it('counts an identical event within 10 minutes up, and creates another after', () => {
    const correlator = new EventCorrelator();
    expect(correlator.next(loaded, 0, fresh)).toEqual({ _tag: 'Create', name: 'e1', event: loaded });
    expect(correlator.next(failed, 1, fresh)).toEqual({ _tag: 'Create', name: 'e2', event: failed });
    expect(correlator.next(loaded, 2, fresh)).toEqual({
      _tag: 'Repeat',
      name: 'e1',
      count: 2,
      event: loaded,
    });
    expect(correlator.next(loaded, 2 + repeatWindowMs, fresh)).toEqual({
      _tag: 'Create',
      name: 'e3',
      event: loaded,
    });
  });

  it('keeps a combined event’s message, prefix included, within the cut, and cuts at a whole character', () => {
    const correlator = new EventCorrelator();
    // An emoji is two UTF-16 units: a cut between them left a lone surrogate, which the API server stores as U+FFFD.
    const failure = (model: number) =>
      kubeEventOf(status('Failed', { reason: `${model}x ${'😀'.repeat(2000)}` }))!;
    const actions = Array.from({ length: maxSimilar + 1 }, (_, i) => correlator.next(failure(i), i, fresh));
    for (const action of actions) {
      if (action._tag === 'Drop') throw new Error('dropped');
      expect(action.event.message.length).toBeLessThanOrEqual(maxEventMessageChars);
      expect(action.event.message).toMatch(/😀…$/u);
    }
    const combined = actions.at(-1);
    expect(combined?._tag === 'Create' && combined.event.message).toMatch(/^\(combined from/);
  });

  it('creates anew an event the API server no longer has', () => {
    const correlator = new EventCorrelator();
    correlator.next(loaded, 0, fresh);
    correlator.forget('e1');
    expect(correlator.next(loaded, 1, fresh)).toEqual({ _tag: 'Create', name: 'e2', event: loaded });
  });

  it('combines similar events past 10 within 10 minutes into one that counts up, with the latest message', () => {
    const correlator = new EventCorrelator();
    const failure = (model: number) => kubeEventOf(status('Failed', { reason: `gone ${model}` }))!;
    const actions = Array.from({ length: maxSimilar + 3 }, (_, i) => correlator.next(failure(i), i, fresh));
    expect(actions.slice(0, maxSimilar).map((action) => action._tag)).toEqual(
      Array(maxSimilar).fill('Create'),
    );
    expect(actions.slice(maxSimilar)).toEqual([
      {
        _tag: 'Create',
        name: 'e11',
        event: { ...failure(10), message: '(combined from similar events): model iris failed: gone 10' },
      },
      {
        _tag: 'Repeat',
        name: 'e11',
        count: 2,
        event: { ...failure(11), message: '(combined from similar events): model iris failed: gone 11' },
      },
      {
        _tag: 'Repeat',
        name: 'e11',
        count: 3,
        event: { ...failure(12), message: '(combined from similar events): model iris failed: gone 12' },
      },
    ]);
    // Another reason is not similar; nor is the same one once the window has passed.
    expect(correlator.next(loaded, 20, fresh)._tag).toBe('Create');
    expect(correlator.next(failure(13), 20 + repeatWindowMs, fresh)).toMatchObject({
      _tag: 'Create',
      event: failure(13),
    });
  });

  it('lets 25 through at once, then one more per 5 minutes', () => {
    const correlator = new EventCorrelator();
    const sent = Array.from({ length: eventBurst + 5 }, () => correlator.next(failed, 0, fresh)._tag);
    expect(sent.filter((tag) => tag !== 'Drop')).toHaveLength(eventBurst);
    expect(correlator.next(failed, refillMs - 1, fresh)._tag).toBe('Drop');
    expect(correlator.next(failed, refillMs, fresh)._tag).not.toBe('Drop');
    expect(correlator.next(failed, refillMs, fresh)._tag).toBe('Drop');
  });
});
