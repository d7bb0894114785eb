/** rateLimitedWarn: the agent port proxy's failures, one warn line per kind at most once a second. */
import pino from 'pino';
import { rateLimitedWarn } from '../../src/net/proxy-answers';
import { LogSink } from '../helpers/log-sink';

describe('rateLimitedWarn', () => {
  // NTP stepping the wall clock back kept every failure of a kind unlogged for as long as the step.
  it('logs a kind again a second after its last line when the wall clock was set back an hour meanwhile', async () => {
    const sink = new LogSink();
    // The wall clock as the process reads it, stepped back at will (spied before the code under test reads it).
    const wallNow = Date.now.bind(Date);
    let stepMs = 0;
    const wallClock = jest.spyOn(Date, 'now').mockImplementation(() => wallNow() + stepMs);
    const warn = rateLimitedWarn(pino(sink));
    warn('unreachable');
    warn('unreachable');
    try {
      stepMs = -3_600_000;
      await new Promise((resolve) => setTimeout(resolve, 1100));
      warn('unreachable');
    } finally {
      wallClock.mockRestore();
    }
    expect(sink.withMessage('proxy failure').map((line) => [line['kind'], line['suppressed']])).toEqual([
      ['unreachable', 0],
      ['unreachable', 1],
    ]);
  });
});
