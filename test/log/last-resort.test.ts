/** guardProcess: an error nothing handled is one error line and a count, at most one line a second, never the exit. */
import { EventEmitter } from 'node:events';
import { createLogger, guardProcess, uncaughtErrorCount } from '../../src/log';

/** The process's logger (createLogger), its lines kept parsed. */
const recordingLog = () => {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('info', {
    write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
  });
  return { log, lines };
};

describe('guardProcess', () => {
  it('logs an uncaught exception and an unhandled rejection once each, with where they came from, and counts them', () => {
    const target = new EventEmitter();
    const { log, lines } = recordingLog();
    let clock = 0;
    const stop = guardProcess(log, target, () => clock);
    const before = uncaughtErrorCount();
    target.emit('uncaughtException', new TypeError("Cannot read properties of null (reading 'name')"));
    clock += 5000;
    target.emit('unhandledRejection', new Error('a promise nobody awaited'));
    expect(uncaughtErrorCount() - before).toBe(2);
    expect(
      lines.map((line) => [line['level'], line['origin'], (line['err'] as { message: string }).message]),
    ).toEqual([
      ['error', 'uncaught exception', "Cannot read properties of null (reading 'name')"],
      ['error', 'unhandled rejection', 'a promise nobody awaited'],
    ]);
    stop();
    expect(target.listenerCount('uncaughtException') + target.listenerCount('unhandledRejection')).toBe(0);
  });

  it('writes one line a second however many errors come, and says how many it did not log', () => {
    const target = new EventEmitter();
    const { log, lines } = recordingLog();
    let clock = 0;
    guardProcess(log, target, () => clock);
    const before = uncaughtErrorCount();
    for (let i = 0; i < 1000; i++) target.emit('uncaughtException', new Error(`loop ${i}`));
    clock += 1000;
    target.emit('uncaughtException', new Error('after the window'));
    expect(uncaughtErrorCount() - before).toBe(1001);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ notLogged: 999 });
  });

  // NTP stepping the wall clock back (or a VM resumed) kept the window open for as long as the step: every error of
  // that hour counted, none logged.
  it('logs an error a second after the last one when the wall clock was set back an hour meanwhile', async () => {
    const target = new EventEmitter();
    const { log, lines } = recordingLog();
    // The wall clock as the process reads it, stepped back at will (spied before the code under test reads it).
    const wallNow = Date.now.bind(Date);
    let stepMs = 0;
    const wallClock = jest.spyOn(Date, 'now').mockImplementation(() => wallNow() + stepMs);
    guardProcess(log, target);
    target.emit('uncaughtException', new Error('before the step'));
    try {
      stepMs = -3_600_000;
      await new Promise((resolve) => setTimeout(resolve, 1100));
      target.emit('uncaughtException', new Error('after the step'));
    } finally {
      wallClock.mockRestore();
    }
    expect(lines.map((line) => (line['err'] as { message: string }).message)).toEqual([
      'before the step',
      'after the step',
    ]);
  });
});
