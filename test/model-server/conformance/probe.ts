/**
 * The disagreement check: one fixed sequence of raw V2 exchanges (metadata, index, loads of the good and broken
 * fixtures, unloads, readiness, inference), run against a real server and against the stand-in playing it, each
 * answer reduced to what modelsync depends on (status, content type, the body's shape and reason). A profile that
 * answers otherwise than its server fails the conformance suite.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../../../src/testing/wait';
import { httpCall, type HttpAnswer } from '../../real-servers/http';
import { fixtureModel, infer, pathName } from '../../real-servers/models';
import type { RealServerKind } from '../../real-servers/servers';
import type { Target } from './targets';

/** One exchange as the check compares it. */
export interface ProbeRecord {
  readonly step: string;
  readonly status: number;
  readonly contentType: string;
  readonly body: unknown;
}

/** What of a body the check compares: JSON with volatile values blanked, or text with the repo's path named. */
const reduce = (answer: HttpAnswer, repo: string): unknown => {
  const text = answer.body.replaceAll(repo, '<repo>');
  try {
    return blank(JSON.parse(text));
  } catch {
    return text.trim() === '' ? '' : 'text';
  }
};

/** Values that change from run to run (ids, versions of libraries), and a traceback's paths and line numbers. */
const blank = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(blank);
  if (typeof value !== 'object' || value === null)
    return typeof value === 'string' ? value.replace(/\n\nAt:[\s\S]*$/, '\n\nAt: …') : value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, inner]) => [
      key,
      key === 'id' || key === 'extensions' ? '…' : blank(inner),
    ]),
  );
};

const mediaType = (answer: HttpAnswer): string => String(answer.headers['content-type'] ?? '').split(';')[0]!;

/** Runs the probe on `target` (an empty model dir) and returns its records. */
export const probe = async (kind: RealServerKind, target: Target): Promise<ProbeRecord[]> => {
  const records: ProbeRecord[] = [];
  const send = async (step: string, method: string, path: string, body?: unknown): Promise<HttpAnswer> => {
    const answer = await httpCall(method, `${target.url}${path}`, body);
    records.push({
      step,
      status: answer.status,
      contentType: mediaType(answer),
      body: reduce(answer, target.modelDir),
    });
    return answer;
  };
  const model = (name: string): string => `/v2/repository/models/${pathName(kind, name)}`;
  const install = (variant: Parameters<typeof fixtureModel>[1], name: string): Promise<void> =>
    cp(fixtureModel(kind, variant), join(target.modelDir, name), { recursive: true });

  await send('metadata', 'GET', '/v2');
  await send('index of an empty repository', 'POST', '/v2/repository/index', {});
  await send('index without a body', 'POST', '/v2/repository/index');
  await send('model list', 'GET', '/v2/models');
  await install('v1', 'good');
  await install('bad-config', 'bad');
  await install('raise-on-load', 'boom');
  await install('v1', '.tmp-good-0a1b2c');
  await send('load', 'POST', `${model('good')}/load`, {});
  records.push({ step: 'infer', status: 200, contentType: '', body: await infer(target, 'good') });
  await send('load again, unchanged', 'POST', `${model('good')}/load`, {});
  await send('load of a missing dir', 'POST', `${model('absent')}/load`, {});
  await send('load of a bad config', 'POST', `${model('bad')}/load`, {});
  await send('load of a model that raises', 'POST', `${model('boom')}/load`, {});
  await send('index with loaded and failed models', 'POST', '/v2/repository/index', {});
  await send('ready of a loaded model', 'GET', `/v2/models/${pathName(kind, 'good')}/ready`);
  await send('ready of an unknown model', 'GET', `/v2/models/${pathName(kind, 'absent')}/ready`);
  await send('unload', 'POST', `${model('good')}/unload`, {});
  await send('unload of an unknown model', 'POST', `${model('absent')}/unload`, {});
  // Triton's unload returns early: the check compares how it ends, not the moment in between.
  for (let tries = 0; tries < 100 && (await target.state('good')) !== 'gone'; tries++) await sleep(50);
  await send('index after the unload', 'POST', '/v2/repository/index', {});
  await send('server live', 'GET', '/v2/health/live');
  await send('server ready', 'GET', '/v2/health/ready');
  return records;
};

/** The probe on a fresh real `kind` and on a fresh stand-in playing it, side by side. */
export const probeBoth = async (
  kind: RealServerKind,
  makeTargets: (kind: RealServerKind, modelDir: string) => Promise<Target>,
  makeStandIn: (kind: RealServerKind, modelDir: string) => Promise<Target>,
): Promise<{ readonly real: ProbeRecord[]; readonly standIn: ProbeRecord[] }> => {
  const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), `modelsync-probe-${kind}-`))));
  const real = await makeTargets(kind, dirs[0]!);
  const standIn = await makeStandIn(kind, dirs[1]!);
  try {
    return { real: await probe(kind, real), standIn: await probe(kind, standIn) };
  } finally {
    await Promise.all([real.stop(), standIn.stop()]);
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
};
