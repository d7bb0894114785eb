/**
 * Every wait, deadline, throttle and duration runs on a clock NTP never steps (`performance.now()`, timers, the
 * agent's monotonicScheduler): set back an hour, the wall clock kept a window, a wait or a recheck for that hour.
 * The wall clock is read only where a time of the world is meant; this scan keeps it so as code is added.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const src = join(__dirname, '..', '..', '..', 'src');

/** Where src/ reads the wall clock, each for a time of the world (never to time a wait). */
const wallTimes: Readonly<Record<string, string>> = {
  'wiring/surface.ts': 'a monotonic instant turned into the wall time /status shows',
  'storage/object-store/azure-credentials.ts':
    "a token's expiry, which Azure's SDK compares with the wall clock",
  'config-source/kube-exec.ts': "an exec plugin's expirationTimestamp, a time of the world",
  'core/errors.ts': "Retry-After's HTTP date, a time of the world",
  'surface/surface-state.ts': 'the times /status shows',
  'surface/kube-event-recorder.ts':
    "the Events' own times and names (their correlation and spam filter time by the clock that never steps)",
};

const sources = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? entry.name === 'testing'
        ? []
        : sources(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );

describe('the wall clock in src/', () => {
  it('is read only where a time of the world is meant, never to time a wait, a deadline or a throttle', () => {
    const readers = sources(src)
      .filter((file) => /Date\.now|new Date\(\)\.getTime|\+new Date/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(src, file).split('\\').join('/'))
      .sort();
    expect(readers).toEqual(Object.keys(wallTimes).sort());
  });
});
