/** guardProcess in a real Node process: an error thrown in a timer callback and a rejection nobody awaits do not end it. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const logFace = join(__dirname, '..', '..', 'dist', 'log');

it('keeps a real process running past an error thrown in a callback and a rejection nobody awaits', () => {
  const result = spawnSync(
    process.execPath,
    [
      '-e',
      `const { guardProcess, uncaughtErrorCount } = require(${JSON.stringify(logFace)});
       guardProcess(require('pino')({}, process.stdout));
       setTimeout(() => { throw new TypeError('thrown in a callback'); }, 1);
       setTimeout(() => { void Promise.reject(new Error('nobody awaits me')); }, 20);
       setTimeout(() => process.stdout.write('still here after ' + uncaughtErrorCount() + '\\n'), 200);`,
    ],
    { encoding: 'utf8', timeout: 10_000 },
  );
  expect(result.status).toBe(0);
  expect(result.stdout).toContain('thrown in a callback');
  expect(result.stdout).toContain('still here after 2');
});
