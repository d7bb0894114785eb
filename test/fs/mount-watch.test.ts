/** mountWatch: calls on a mount that stops answering fail (and new ones at once) instead of waiting for good. */
import pino from 'pino';
import { EffectError } from '../../src/core/errors';
import { unansweredMounts } from '../../src/fs';
import { mountWatch, type MountWatch } from '../../src/fs/mount-watch';
import { sleep } from '../../src/testing/wait';
import { atLevel, LogSink } from '../helpers/log-sink';

/** A promise and the function that settles it. */
const deferred = <T>(): { readonly promise: Promise<T>; readonly settle: (value: T) => void } => {
  let settle!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (settle = resolve));
  return { promise, settle };
};

/** A watch of `/models` whose question is `ask`, asked every 10 ms and given 40 ms to answer. */
const watchWith = (ask: () => Promise<unknown>): { readonly watch: MountWatch; readonly sink: LogSink } => {
  const sink = new LogSink();
  const log = pino({ level: 'debug' }, sink);
  return { watch: mountWatch({ root: '/models', log, ask, checkEveryMs: 10, answerWithinMs: 40 }), sink };
};

describe('mountWatch', () => {
  it('lets a call run as long as it takes while the mount answers, asking it all along', async () => {
    let asked = 0;
    const { watch, sink } = watchWith(() => Promise.resolve(void asked++));
    const slow = watch(() => sleep(150).then(() => 'done'));
    await expect(slow).resolves.toBe('done');
    expect(asked).toBeGreaterThanOrEqual(1); // asked while it ran (how often depends on the machine's timers)
    expect(sink.lines).toEqual([]);
  });

  it('asks nothing while no call is pending', async () => {
    let asked = 0;
    const { watch } = watchWith(() => Promise.resolve(void asked++));
    await expect(watch(() => Promise.resolve(42))).resolves.toBe(42);
    await sleep(60);
    expect(asked).toBe(0);
  });

  it('passes on a call that fails, and a call that throws before it starts', async () => {
    const { watch } = watchWith(() => Promise.resolve());
    await expect(watch(() => Promise.reject(new Error('EACCES')))).rejects.toThrow('EACCES');
    await expect(
      watch(() => {
        throw new Error('thrown at once');
      }),
    ).rejects.toThrow('thrown at once');
  });

  it('takes an answer that is an error as an answer: the mount is there', async () => {
    const { watch } = watchWith(() => Promise.reject(new Error('ENOTCONN')));
    await expect(watch(() => sleep(100).then(() => 'done'))).resolves.toBe('done');
  });

  it('fails the pending calls once the mount does not answer, and new ones at once, until it answers again', async () => {
    const answer = deferred<void>();
    let asked = 0;
    const { watch, sink } = watchWith(() => {
      asked++;
      return answer.promise;
    });
    const hung = watch(() => new Promise<never>(() => undefined));
    const alsoHung = watch(() => new Promise<never>(() => undefined));
    const failure = await hung.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(EffectError);
    expect(failure).toMatchObject({ kind: 'timeout', retryable: true });
    expect((failure as Error).message).toMatch(/the model dir \/models does not answer.*within 40 ms/);
    // Its question holds a thread until it returns: the process entry must not wait for it at exit.
    expect(unansweredMounts()).toEqual(['/models']);
    await expect(alsoHung).rejects.toMatchObject({ kind: 'timeout' });

    // While it hangs, a new call fails without being started: it would take one more of libuv's threads for good.
    let started = false;
    await expect(
      watch(() => {
        started = true;
        return Promise.resolve();
      }),
    ).rejects.toMatchObject({ kind: 'timeout' });
    expect(started).toBe(false);
    await sleep(60);
    expect(asked).toBe(1); // one question at a time
    expect(sink.lines.filter(atLevel('error'))).toEqual([
      expect.objectContaining({
        dir: '/models',
        answerWithinMs: 40,
        msg: expect.stringMatching(/hung mount/) as unknown,
      }),
    ]);

    answer.settle();
    await sleep(0);
    expect(unansweredMounts()).toEqual([]);
    await expect(watch(() => Promise.resolve('again'))).resolves.toBe('again');
    expect(sink.lines.filter(atLevel('warn'))).toEqual([
      expect.objectContaining({ dir: '/models', msg: 'the model dir answers again' }),
    ]);
  });
  it("names the dir as told (the storage initializer's dest) in its errors and log lines", async () => {
    const sink = new LogSink();
    const log = pino({ level: 'debug' }, sink);
    const answer = deferred<void>();
    const ask = () => answer.promise;
    const watch = mountWatch({
      root: '/mnt/models',
      what: 'the dest',
      log,
      ask,
      checkEveryMs: 10,
      answerWithinMs: 40,
    });
    await expect(watch(() => new Promise<never>(() => undefined))).rejects.toThrow(
      /^the dest \/mnt\/models does not answer/,
    );
    answer.settle();
    await sleep(0);
    expect(sink.lines.map((line) => line.msg)).toEqual([
      'the dest does not answer (a hung mount?); its calls fail',
      'the dest answers again',
    ]);
  });

  it('hands what a call brings back after its caller was told it failed to its disposeLate, once', async () => {
    const answer = deferred<void>();
    const result = deferred<string>();
    const { watch } = watchWith(() => answer.promise);
    const disposed: string[] = [];
    const call = watch(
      () => result.promise,
      (late) => disposed.push(late),
    );
    await expect(call).rejects.toMatchObject({ kind: 'timeout' });
    answer.settle();
    result.settle('a staging dir made late');
    await sleep(0);
    expect(disposed).toEqual(['a staging dir made late']);
  });

  it('survives a disposeLate that throws', async () => {
    const answer = deferred<void>();
    const result = deferred<string>();
    const { watch } = watchWith(() => answer.promise);
    const call = watch(
      () => result.promise,
      () => {
        throw new Error('disposal failed');
      },
    );
    await expect(call).rejects.toMatchObject({ kind: 'timeout' });
    answer.settle();
    result.settle('late');
    await sleep(10);
    await expect(watch(() => Promise.resolve('after'))).resolves.toBe('after');
  });
});
