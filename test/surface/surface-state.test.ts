/** The periods of the surface's timers: each one wakes an idle agent. */
import { heartbeatMs, recheckMs } from '../../src/surface/surface-state';

describe('heartbeatMs and recheckMs', () => {
  it('beats four times within the stall, however long: the default 60 s stall beats every 15 s', () => {
    expect([500, 4000, 60_000, 600_000].map(heartbeatMs)).toEqual([125, 1000, 15_000, 150_000]);
  });

  it('looks for a missing config dir at least once a second, and as often as the heartbeat under a short stall', () => {
    expect([500, 4000, 60_000, 600_000].map(recheckMs)).toEqual([125, 1000, 1000, 1000]);
  });
});
