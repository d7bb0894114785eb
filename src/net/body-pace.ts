/**
 * paceBody: a request body must bring bytes at least every `stallMs`, and past the first `stallMs` at `minRate`
 * bytes a second on average: each `minRate` bytes buy one more second (Apache's mod_reqtimeout,
 * `body=20,MinRate=500`). Only the time the body is read counts: while its reader (the model server) holds it
 * back, the clock stops, so that a slow reader never cuts a client that sends.
 */
import type { IncomingMessage } from 'node:http';
import { forgetBody, noteBody, type BodyWatch } from './connection-cap';
import { announcesBody } from './early-answer';

/** How late a timer may fire before the lateness is taken for a stall of this process (a busy or paused host). */
const lateToleranceMs = 50;

/** How fast a request body must arrive. */
export interface BodyPace {
  /** The longest a body may bring no byte while it is read; also the time it has before its rate counts. */
  readonly stallMs: number;
  /** Bytes a second, on average, past the first `stallMs`; 0: no minimum rate. */
  readonly minRate: number;
}

/**
 * Watches the body of `request` as its reader takes it: `breached` is called once, when it falls behind `pace`;
 * the connection cap sees the watch (a stalled body gives way). Returns how to stop watching.
 */
export const paceBody = (request: IncomingMessage, pace: BodyPace, breached: () => void): (() => void) => {
  if (!announcesBody(request)) return () => undefined;
  let readBefore = 0; // ms the body was read before `flowingSince`
  let flowingSince: number | undefined;
  let bytes = 0;
  let lastByteAt = 0; // in read time
  let timer: NodeJS.Timeout | undefined;
  let dueAt: number | undefined; // when the timer should fire
  let confirming: NodeJS.Immediate | undefined;
  let counting = false;
  let over = false;
  const readMs = (): number =>
    readBefore + (flowingSince === undefined ? 0 : performance.now() - flowingSince);
  const deadline = (): number =>
    Math.min(lastByteAt, pace.minRate > 0 ? (bytes * 1000) / pace.minRate : Infinity) + pace.stallMs;
  const check = (afterIo = false): void => {
    timer = undefined;
    confirming = undefined;
    if (over || flowingSince === undefined) return;
    // A late timer says this process did not run: a client beside it could not send either. The time past due is
    // not counted, and the body gets a fresh stallMs.
    const late = dueAt === undefined ? 0 : performance.now() - dueAt;
    dueAt = undefined;
    if (late > lateToleranceMs) {
      readBefore -= late;
      lastByteAt = readMs();
    }
    const left = deadline() - readMs();
    if (left > 0) {
      dueAt = performance.now() + left;
      return void (timer = setTimeout(check, left).unref());
    }
    // Judged only after one turn through I/O: a timer late because this process did not run (a busy or paused
    // host) fires before the bytes the client sent meanwhile are read, and would blame the client for our stall.
    if (!afterIo) return void (confirming = setImmediate(check, true));
    stop();
    breached();
  };
  const count = (chunk: Buffer): void => {
    bytes += chunk.length;
    lastByteAt = readMs();
  };
  const resumed = (): void => {
    if (flowingSince !== undefined) return;
    if (!counting) request.on('data', count); // only once it flows: a 'data' listener would make it flow
    counting = true;
    flowingSince = performance.now();
    check();
  };
  const paused = (): void => {
    readBefore = readMs();
    flowingSince = undefined;
    clearTimeout(timer);
    clearImmediate(confirming);
    timer = confirming = dueAt = undefined;
  };
  const watch: BodyWatch = {
    stalledMs: () => (over || flowingSince === undefined ? 0 : readMs() - lastByteAt),
  };
  const stop = (): void => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    clearImmediate(confirming);
    request
      .off('resume', resumed)
      .off('pause', paused)
      .off('data', count)
      .off('end', stop)
      .off('close', stop);
    forgetBody(request.socket, watch);
  };
  request.on('resume', resumed).on('pause', paused).once('end', stop).once('close', stop);
  noteBody(request.socket, watch);
  if (request.readableFlowing === true) resumed();
  return stop;
};
