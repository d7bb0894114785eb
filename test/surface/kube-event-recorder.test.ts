/**
 * The recorder of Kubernetes Events: it never holds the agent up, keeps order, counts identical events up, bounds
 * what it queues, and stops at a refusal, saying so, trying one write again 10 minutes later.
 */
import pino from 'pino';
import { configRejectedEvent, type KubeEventNote, type KubeEventsWriter } from '../../src/core/kube-event';
import { kubeEventRecorder } from '../../src/surface';
import { LogSink } from '../helpers/log-sink';

const pod = { name: 'pod-1', namespace: 'ns' };
const note = (reason: string): KubeEventNote => configRejectedEvent(reason);

/** A writer that keeps what it was asked to write, each write answered when `release` is called (or at once). */
const writer = (
  options: {
    readonly hold?: boolean;
    readonly fail?: Error;
    readonly gone?: boolean;
    readonly pod?: typeof pod;
  } = {},
) => {
  const writes: Array<{ readonly kind: 'create' | 'repeat'; readonly body: Record<string, unknown> }> = [];
  const waiting: Array<() => void> = [];
  const answer = async (): Promise<void> => {
    if (options.hold) await new Promise<void>((resolve) => waiting.push(resolve));
    if (options.fail !== undefined) throw options.fail;
  };
  const api: KubeEventsWriter = {
    pod: options.pod ?? pod,
    create: async (event) => {
      writes.push({ kind: 'create', body: event as Record<string, unknown> });
      await answer();
    },
    repeat: async (name, patch) => {
      writes.push({ kind: 'repeat', body: { name, ...patch } });
      await answer();
      return options.gone !== true;
    },
  };
  return { api, writes, release: () => waiting.splice(0).forEach((resolve) => resolve()) };
};

const logger = () => {
  const sink = new LogSink();
  return { sink, log: pino({ level: 'debug' }, sink) };
};

describe('kubeEventRecorder', () => {
  it('queues without waiting for the API server, and writes in order, one at a time', async () => {
    const { api, writes, release } = writer({ hold: true });
    const recorder = kubeEventRecorder(() => Promise.resolve(api), logger().log);
    recorder.record(note('a'));
    recorder.record(note('b'));
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes.map((write) => write.body['message'])).toEqual([
      'config rejected; keeping the previous models: a',
    ]);
    const flushed = recorder.flushed();
    release();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await flushed;
    expect(writes.map((write) => write.body['message'])).toEqual([
      'config rejected; keeping the previous models: a',
      'config rejected; keeping the previous models: b',
    ]);
  });

  it('counts an identical event up on the first one, and creates it anew once the API server lost it', async () => {
    const { api, writes } = writer();
    let now = 1000;
    const recorder = kubeEventRecorder(() => Promise.resolve(api), logger().log, { now: () => now });
    recorder.record(note('a'));
    await recorder.flushed();
    now += 1000;
    recorder.record(note('a'));
    await recorder.flushed();
    const name = writes[0]!.body['metadata'] as { name: string };
    expect(writes[1]).toEqual({
      kind: 'repeat',
      body: {
        name: name.name,
        count: 2,
        message: 'config rejected; keeping the previous models: a',
        lastTimestamp: '1970-01-01T00:00:02Z',
      },
    });

    const gone = writer({ gone: true });
    const again = kubeEventRecorder(() => Promise.resolve(gone.api), logger().log, { now: () => now });
    again.record(note('a'));
    again.record(note('a'));
    await again.flushed();
    expect(gone.writes.map((write) => write.kind)).toEqual(['create', 'repeat', 'create']);
  });

  it.each([
    ['253 characters', `${'a'.repeat(120)}.${'b'.repeat(132)}`],
    // The name is cut to 239 characters, leaving room for a dot and the 13 hex digits of a time in microseconds.
    ['a dash where the name is cut', `${'a'.repeat(238)}-b.${'c'.repeat(12)}`],
    ['a dot where the name is cut', `${'a'.repeat(238)}.${'b'.repeat(14)}`],
  ])(
    'names the Event of a Pod named with %s as the API server takes it, naming the Pod in full',
    async (_, name) => {
      const long = { name, namespace: 'ns' };
      const { api, writes } = writer({ pod: long });
      const recorder = kubeEventRecorder(() => Promise.resolve(api), logger().log);
      recorder.record(note('a'));
      recorder.record(note('b'));
      await recorder.flushed();
      const names = writes.map((write) => (write.body['metadata'] as { name: string }).name);
      expect(names).toHaveLength(2);
      expect(new Set(names).size).toBe(2);
      for (const eventName of names) {
        // A DNS subdomain (RFC 1123), as the API server validates an object's name.
        expect(eventName.length).toBeLessThanOrEqual(253);
        expect(eventName).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
        expect(eventName.startsWith('a'.repeat(120))).toBe(true);
      }
      expect(writes.map((write) => write.body['involvedObject'])).toEqual([
        expect.objectContaining({ kind: 'Pod', name }),
        expect.objectContaining({ kind: 'Pod', name }),
      ]);
    },
  );

  it('drops what is over its queue while a write hangs, and counts it', async () => {
    const { api, writes, release } = writer({ hold: true });
    const recorder = kubeEventRecorder(() => Promise.resolve(api), logger().log, { maxQueued: 3 });
    for (let i = 0; i < 10; i++) recorder.record(note(String(i)));
    expect(recorder.dropped()).toBe(7);
    const flushed = recorder.flushed();
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      release();
    }
    await flushed;
    expect(writes).toHaveLength(3);
  });

  it('stops at a refusal, saying once what RBAC it needs; other failures are said once per 10 minutes', async () => {
    const refused = writer({ fail: new Error('403') });
    const { sink, log } = logger();
    const recorder = kubeEventRecorder(() => Promise.resolve(refused.api), log, {
      failure: () => ({ reason: 'grant create and patch on events', refused: true }),
    });
    for (let i = 0; i < 5; i++) recorder.record(note(String(i)));
    await recorder.flushed();
    expect(refused.writes).toHaveLength(1);
    expect(sink.withMessage('refused a Kubernetes Event')).toHaveLength(1);
    expect(sink.lines[0]).toMatchObject({ reason: 'grant create and patch on events' });
    expect(recorder.dropped()).toBe(5);
    expect(recorder.active()).toBe(false);

    const flaky = writer({ fail: new Error('ECONNRESET') });
    const second = logger();
    const retried = kubeEventRecorder(() => Promise.resolve(flaky.api), second.log);
    for (let i = 0; i < 5; i++) retried.record(note(String(i)));
    await retried.flushed();
    expect(flaky.writes).toHaveLength(5);
    expect(second.sink.withMessage('cannot write a Kubernetes Event')).toHaveLength(1);
  });

  it('tries one write again 10 minutes after a refusal, and writes on once the Role allows it', async () => {
    let clock = 0;
    let allowed = false;
    const writes: string[] = [];
    const api: KubeEventsWriter = {
      pod,
      create: (event) => {
        writes.push((event as { message: string }).message);
        return allowed ? Promise.resolve() : Promise.reject(new Error('403'));
      },
      repeat: () => Promise.resolve(true),
    };
    const { sink, log } = logger();
    const recorder = kubeEventRecorder(() => Promise.resolve(api), log, {
      now: () => clock,
      elapsed: () => clock,
      failure: () => ({ reason: 'grant create and patch on events', refused: true }),
    });
    recorder.record(note('a'));
    await recorder.flushed();
    clock += 9 * 60_000;
    recorder.record(note('b'));
    await recorder.flushed();
    expect(writes).toHaveLength(1); // still refused: nothing asked of the API server
    expect(recorder.active()).toBe(false);
    clock += 60_000;
    expect(recorder.active()).toBe(true);
    recorder.record(note('c'));
    await recorder.flushed();
    expect(writes).toHaveLength(2); // one write tried: refused again, said again
    expect(sink.withMessage('refused a Kubernetes Event')).toHaveLength(2);
    clock += 10 * 60_000;
    allowed = true; // the Role applied meanwhile
    recorder.record(note('d'));
    recorder.record(note('e'));
    await recorder.flushed();
    expect(writes).toHaveLength(4);
    expect(writes.slice(2).map((message) => message.includes('d') || message.includes('e'))).toEqual([
      true,
      true,
    ]);
    expect(recorder.dropped()).toBe(3);
  });

  // NTP setting the wall clock back an hour after a refusal kept every Event unwritten for 70 minutes, not 10: the
  // waits ran on the clock the Events' times are read from.
  it('tries one write again 10 minutes after a refusal when the wall clock was set back an hour meanwhile', async () => {
    let wall = 5_000_000;
    let elapsed = 0;
    const writes: string[] = [];
    const api: KubeEventsWriter = {
      pod,
      create: (event) => {
        writes.push((event as { message: string }).message);
        return Promise.reject(new Error('403'));
      },
      repeat: () => Promise.resolve(true),
    };
    const recorder = kubeEventRecorder(() => Promise.resolve(api), logger().log, {
      now: () => wall,
      elapsed: () => elapsed,
      failure: () => ({ reason: 'grant create and patch on events', refused: true }),
    });
    recorder.record(note('a'));
    await recorder.flushed();
    wall -= 3_600_000;
    elapsed += 10 * 60_000;
    expect(recorder.active()).toBe(true);
    recorder.record(note('b'));
    await recorder.flushed();
    expect(writes).toHaveLength(2);
  });

  it('writes again 5 minutes after a burst, and a new Event for one 10 minutes old, when the wall clock was set back an hour meanwhile', async () => {
    // client-go's spam filter and correlation time by Go's monotonic clock: a step of the wall clock moves neither.
    let wall = 5_000_000;
    let elapsed = 0;
    const { api, writes } = writer();
    const recorder = kubeEventRecorder(() => Promise.resolve(api), logger().log, {
      now: () => wall,
      elapsed: () => elapsed,
    });
    for (let i = 0; i < 25; i++) recorder.record(note(`burst ${i}`));
    recorder.record(note('over the burst'));
    await recorder.flushed();
    expect(writes).toHaveLength(25);
    expect(recorder.dropped()).toBe(1);
    wall -= 3_600_000;
    elapsed += 11 * 60_000;
    recorder.record(note('burst 0'));
    await recorder.flushed();
    expect(writes.slice(25).map((write) => write.kind)).toEqual(['create']);
  });

  it('asks for the API server settings again a minute after they could not be read', async () => {
    let clock = 0;
    let readable = false;
    const ok = writer();
    const { sink, log } = logger();
    const recorder = kubeEventRecorder(
      () => (readable ? Promise.resolve(ok.api) : Promise.reject(new Error('token file not mounted yet'))),
      log,
      { now: () => clock, elapsed: () => clock },
    );
    recorder.record(note('a'));
    await recorder.flushed();
    readable = true;
    recorder.record(note('b'));
    await recorder.flushed();
    expect(ok.writes).toHaveLength(0);
    clock += 60_000;
    recorder.record(note('c'));
    await recorder.flushed();
    expect(ok.writes).toHaveLength(1);
    expect(sink.withMessage('no Kubernetes Events: the API server settings cannot be read')).toHaveLength(1);

    // Settings that stay unreadable: asked again each minute, said at warn once.
    const { sink: quiet, log: quietLog } = logger();
    let asked = 0;
    const never = kubeEventRecorder(() => (asked++, Promise.reject(new Error('no kubeconfig'))), quietLog, {
      now: () => clock,
      elapsed: () => clock,
    });
    for (let i = 0; i < 3; i++) {
      never.record(note(String(i)));
      await never.flushed();
      clock += 60_000;
    }
    expect(asked).toBe(3);
    expect(quiet.lines.map((line) => line.level)).toEqual([40, 20, 20]);
  });

  it('says once why there are no Events when the Pod or the cluster is unknown, and writes nothing', async () => {
    const { sink, log } = logger();
    const recorder = kubeEventRecorder(() => Promise.resolve({ unavailable: 'no POD_NAME set' }), log);
    recorder.record(note('a'));
    recorder.record(note('b'));
    await recorder.flushed();
    expect(recorder.active()).toBe(false);
    recorder.record(note('c'));
    await recorder.flushed();
    expect(sink.lines.map((line) => [line.msg, line['why'], line.level])).toEqual([
      ['no Kubernetes Events (--kube-events auto)', 'no POD_NAME set', 30],
    ]);
    const outside = logger();
    const quiet = kubeEventRecorder(
      () => Promise.resolve({ unavailable: 'not in a pod', quiet: true }),
      outside.log,
    );
    quiet.record(note('a'));
    await quiet.flushed();
    expect(outside.sink.lines.map((line) => [line.msg, line.level])).toEqual([
      ['no Kubernetes Events (--kube-events auto)', 20],
    ]);
  });
});
