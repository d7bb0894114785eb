/** Tests of logStatus: one line per status, the model as `model`, the storage URI without its credentials. */
import type pino from 'pino';
import { parseQuantity } from '../../src/core/quantity';
import type { ModelName } from '../../src/core/model-name';
import { logStatus } from '../../src/loader/status-log';
import { createLogger } from '../../src/log/logger';
import { LogSink } from '../helpers/log-sink';

const model = 'm1' as ModelName;
const spec = { storageUri: 'https://u:pw@host/m.tgz?X-Amz-Signature=abc', memory: parseQuantity('1Gi')! };

const logged = (level: pino.Level, ...statuses: Parameters<typeof logStatus>[1][]): LogSink => {
  const sink = new LogSink();
  const log = createLogger(level, sink);
  for (const status of statuses) logStatus(log, status);
  return sink;
};

describe('logStatus', () => {
  it('logs the model as `model` and the storage URI without user info or query', () => {
    const [line] = logged('info', { modelName: model, phase: 'Downloading', spec }).lines;
    expect(line).toMatchObject({
      level: 'info',
      msg: 'model downloading',
      model: 'm1',
      phase: 'Downloading',
    });
    expect(line!['storageUri']).toBe('https://host/m.tgz');
    expect(line).not.toHaveProperty('modelName');
    expect(line).not.toHaveProperty('spec');
  });

  it('logs a lost model the server lists again as listed again, not as loaded', () => {
    const [line] = logged('info', { modelName: model, phase: 'Loaded', spec, listedAgain: true }).lines;
    expect(line).toMatchObject({
      level: 'info',
      msg: 'model listed again by the model server',
      phase: 'Loaded',
    });
  });

  it('logs a retry at warn and a failure at error, with the reason, kind and attempt', () => {
    const failure = { reason: 'GET https://host/m.tgz returned HTTP 503', errorKind: 'http-status' as const };
    const sink = logged(
      'info',
      { modelName: model, phase: 'Retrying', spec, ...failure, attempt: 1 },
      { modelName: model, phase: 'Failed', spec, ...failure, attempt: 2 },
    );
    expect(sink.lines.map((l) => [l.level, l.msg, l['reason'], l['errorKind'], l['attempt']])).toEqual([
      ['warn', 'model step failed; retrying', failure.reason, 'http-status', 1],
      ['error', 'model failed', failure.reason, 'http-status', 2],
    ]);
  });

  it('logs Pending at debug only, so a burst of 10k models stays out of an info log', () => {
    expect(logged('info', { modelName: model, phase: 'Pending', spec }).lines).toEqual([]);
    expect(logged('debug', { modelName: model, phase: 'Pending', spec }).lines).toHaveLength(1);
  });

  it('logs a removal without a storage URI', () => {
    const [line] = logged('info', { modelName: model, phase: 'Removed' }).lines;
    expect(line).toMatchObject({ msg: 'model removed', model: 'm1' });
    expect(line).not.toHaveProperty('storageUri');
  });
});
