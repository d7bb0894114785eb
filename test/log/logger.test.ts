/** Tests of the root logger's redaction guard: whatever reaches a line, no secret is written. */
import { registerSecret } from '../../src/core/redact';
import { createLogger } from '../../src/log/logger';
import { LogSink } from '../helpers/log-sink';

const logTo = (): { readonly sink: LogSink; readonly log: ReturnType<typeof createLogger> } => {
  const sink = new LogSink();
  return { sink, log: createLogger('debug', sink) };
};

describe('createLogger', () => {
  it('hides URL credentials and secret shapes in the message and in fields, nested ones included', () => {
    const { sink, log } = logTo();
    log.warn(
      { uri: 'https://u:pw@h/m.bin?sig=abc', details: { headers: ['Authorization: Bearer t0k3n'] } },
      'GET https://h/m.bin?X-Amz-Signature=f00 failed',
    );
    expect(sink.lines[0]).toMatchObject({
      uri: 'https://h/m.bin',
      details: { headers: ['Authorization: [REDACTED]'] },
      msg: 'GET https://h/m.bin failed',
    });
  });

  it('hides a secret in a serialized error, its stack and its cause chain', () => {
    const { sink, log } = logTo();
    const cause = new TypeError(
      'Request cannot be constructed from a URL that includes credentials: http://a:b@h/x',
    );
    log.error({ err: new Error('fetch failed for token=s3cr3t', { cause }) }, 'download failed');
    const line = JSON.stringify(sink.lines[0]);
    expect(line).toContain('token=[REDACTED]');
    expect(line).toContain('includes credentials: http://h/x');
    expect(line).not.toContain('s3cr3t');
    expect(line).not.toContain('a:b@');
  });

  it('hides a secret registered after a child logger bound it', () => {
    const { sink, log } = logTo();
    const child = log.child({ endpoint: 'key opaque-value-42' });
    registerSecret('opaque-value-42');
    child.info('calling');
    expect(sink.lines[0]).toMatchObject({ endpoint: 'key [REDACTED]', msg: 'calling' });
  });

  it('writes each level as its label, trace to fatal, where log pipelines read the severity', () => {
    const { sink, log } = logTo();
    log.level = 'trace';
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const) log[level](level);
    expect(sink.lines.map((line) => [line.level, line.msg])).toEqual(
      ['trace', 'debug', 'info', 'warn', 'error', 'fatal'].map((level) => [level, level]),
    );
  });

  it('writes lines without secrets unchanged', () => {
    const { sink, log } = logTo();
    log.info({ model: 'm1', storageUri: 'https://h/m.bin', attempt: 2 }, 'model loaded');
    expect(sink.lines[0]).toMatchObject({
      model: 'm1',
      storageUri: 'https://h/m.bin',
      attempt: 2,
      msg: 'model loaded',
    });
  });
});

describe('createLogger error lines', () => {
  const failure = Object.assign(new Error('load m1 returned HTTP 500: boom'), {
    name: 'EffectError',
    kind: 'http-status',
    status: 500,
  });

  it('writes an error as one line above debug: type, message, kind and status, no stack', () => {
    const sink = new LogSink();
    createLogger('info', sink).warn({ err: failure, model: 'm1' }, 'model step failed; retrying');
    expect(sink.lines[0]?.['err']).toEqual({
      type: 'EffectError',
      message: 'load m1 returned HTTP 500: boom',
      kind: 'http-status',
      status: 500,
    });
    expect(JSON.stringify(sink.lines[0])).not.toContain('\\n    at ');
  });

  it('keeps the stack at debug', () => {
    const sink = new LogSink();
    createLogger('debug', sink).warn({ err: failure }, 'failed');
    expect(String((sink.lines[0]?.['err'] as Record<string, unknown>)['stack'])).toContain('    at ');
  });
});
