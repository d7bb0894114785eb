/** Tests of logProcessWarnings: Node's warnings become JSON log lines, and Node's plain-text printer is taken off. */
import { EventEmitter } from 'node:events';
import { createLogger } from '../../src/log/logger';
import { logProcessWarnings } from '../../src/log/last-resort';
import { LogSink } from '../helpers/log-sink';

/** A warning as `process.emitWarning` makes it. */
const warningOf = (message: string, name = 'Warning', code?: string): Error & { code?: string } =>
  Object.assign(new Error(message), { name }, code !== undefined ? { code } : {});

describe('logProcessWarnings', () => {
  it("replaces the process's own printer with one warn line per warning: warning (its name), code, message, no stack", () => {
    const target = new EventEmitter();
    const printed: Error[] = [];
    target.on('warning', (warning: Error) => printed.push(warning));
    const sink = new LogSink();
    logProcessWarnings(createLogger('info', sink), target);
    target.emit('warning', warningOf('NodeVersionSupportWarning: upgrade\nto node >=22.'));
    target.emit('warning', warningOf('Buffer() is deprecated', 'DeprecationWarning', 'DEP0005'));
    expect(printed).toEqual([]);
    expect(sink.lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'process warning',
        component: 'process',
        warning: 'Warning',
        message: 'NodeVersionSupportWarning: upgrade\nto node >=22.',
      }),
      expect.objectContaining({
        warning: 'DeprecationWarning',
        code: 'DEP0005',
        message: 'Buffer() is deprecated',
      }),
    ]);
    expect(sink.lines[0]).not.toHaveProperty('stack');
    expect(sink.lines[0]).not.toHaveProperty('code');
  });

  it('adds the stack at debug, and redacts a secret a warning quotes', () => {
    const target = new EventEmitter();
    const sink = new LogSink();
    logProcessWarnings(createLogger('debug', sink), target);
    target.emit('warning', warningOf('fetching https://user:pw-1234@host/m failed'));
    expect(sink.lines[0]!['stack']).toEqual(expect.stringContaining('process-warnings.test.ts'));
    expect(JSON.stringify(sink.lines)).not.toContain('pw-1234');
  });

  it('puts the printer back when undone, and logs nothing more', () => {
    const target = new EventEmitter();
    const printed: Error[] = [];
    target.on('warning', (warning: Error) => printed.push(warning));
    const sink = new LogSink();
    const undo = logProcessWarnings(createLogger('info', sink), target);
    undo();
    target.emit('warning', warningOf('after'));
    expect(printed.map((warning) => warning.message)).toEqual(['after']);
    expect(sink.lines).toEqual([]);
  });
});
