/** Tests of the per-model steps with recording ports: what each step calls, in which order, and what it leaves. */
import pino from 'pino';
import { retryableError } from '../../src/core/errors';
import type { ModelSpec } from '../../src/core/model-config';
import {
  bringIn,
  isInPlace,
  takeOut,
  type ModelState,
  type ReconcileEffects,
} from '../../src/loader/reconcile';
import { createSlots } from '../../src/core/slots';
import { createContentSharing } from '../../src/loader/content-sharing';
import type { DownloadRequest } from '../../src/ports';
import { name, spec } from '../helpers/fixtures';
import { recordingPorts, type RecordingFailures } from './recording-ports';

const m1 = name('m1');
const [v1, v2] = [spec('/models/v1'), spec('/models/v2')];
const running = (): AbortSignal => new AbortController().signal;
const aborted = (): AbortSignal => AbortSignal.abort(new Error('superseded'));

/** The recording ports, with slots of one and a reporter that records too. */
const recording = (fail: RecordingFailures = {}): { effects: ReconcileEffects; calls: string[] } => {
  const { ports, calls } = recordingPorts(fail);
  const effects: ReconcileEffects = {
    ...ports,
    slots: { download: createSlots(1), load: createSlots(1) },
    log: pino({ level: 'silent' }),
    report: (model, phase, s, _logFields, details) =>
      calls.push(
        `report ${model} ${phase}${s ? ` ${s.storageUri}` : ''}` +
          `${details?.filesFrom !== undefined ? ` (files from ${details.filesFrom})` : ''}`,
      ),
  };
  return { effects, calls };
};

const model = (onDisk?: ModelSpec, loadedSpec?: ModelSpec): ModelState => ({
  name: m1,
  onDisk,
  loaded: loadedSpec !== undefined,
  loadedSpec,
});

describe('bringIn', () => {
  it('downloads, journals the load before the swap, loads, confirms it and then reports Loaded', async () => {
    const { effects, calls } = recording();
    const state = model();

    await bringIn(state, v1, effects, { stop: running(), supersede: running() });

    expect(calls).toEqual([
      'report m1 Downloading /models/v1',
      'install m1 /models/v1',
      'download /models/v1 into /staging',
      'journal starting m1',
      'report m1 Loading /models/v1 (files from storage)',
      'load m1',
      'journal confirmed m1',
      'report m1 Loaded /models/v1',
      'dropReplaced m1',
    ]);
    expect(state).toEqual(model(v1, v1));
  });

  it('asks for a reload of the new version when another is loaded, and drops the replaced one after', async () => {
    const { effects, calls } = recording();
    const state = model(v1, v1);

    await bringIn(state, v2, effects, { stop: running(), supersede: running() });

    expect(calls.filter((c) => !c.startsWith('report') && !c.startsWith('journal'))).toEqual([
      'install m1 /models/v2',
      'download /models/v2 into /staging',
      'load m1 replacing',
      'dropReplaced m1',
    ]);
    expect(state).toEqual(model(v2, v2));
  });

  it('only loads when the spec is on disk, and only reports Loaded when it is loaded too', async () => {
    const onDisk = recording();
    await bringIn(model(v1), v1, onDisk.effects, { stop: running(), supersede: running() });
    expect(onDisk.calls).toEqual([
      'report m1 Loading /models/v1',
      'journal starting m1',
      'load m1',
      'journal confirmed m1',
      'report m1 Loaded /models/v1',
    ]);

    const inPlace = recording();
    await bringIn(model(v1, v1), v1, inPlace.effects, { stop: running(), supersede: running() });
    expect(inPlace.calls).toEqual(['report m1 Loaded /models/v1']);
  });

  it('confirms the journalled install of the version the server holds (changed back before the new one loaded)', async () => {
    const { effects, calls } = recording();
    const state: ModelState = { ...model(v2, v1) }; // v2 swapped in, its load given up; v1 still loaded

    await bringIn(state, v1, effects, { stop: running(), supersede: running() });

    expect(calls.filter((c) => !c.startsWith('report'))).toEqual([
      'install m1 /models/v1',
      'download /models/v1 into /staging',
      'journal starting m1',
      'journal confirmed m1', // else a restart loads it again, as a load never confirmed
      'dropReplaced m1',
    ]);
    expect(state).toEqual(model(v1, v1));
  });

  it('keeps the download it made when the load fails, leaves the load unconfirmed and rejects with its error', async () => {
    const failure = retryableError('http-status', 'HTTP 503');
    const { effects, calls } = recording({ load: { m1: [failure] } });
    const state = model();

    await expect(bringIn(state, v1, effects, { stop: running(), supersede: running() })).rejects.toBe(
      failure,
    );

    expect(calls).not.toContain('journal confirmed m1');
    expect(calls.at(-1)).toBe('dropReplaced m1');
    expect(state).toEqual(model(v1));
  });

  it('loads the version it replaced again after a failed reload (TorchServe unregistered it), not taking it as loaded', async () => {
    const { effects, calls } = recording({ load: { m1: [retryableError('http-status', 'HTTP 500')] } });
    const state = model(v1, v1);
    await expect(bringIn(state, v2, effects, { stop: running(), supersede: running() })).rejects.toThrow(
      'HTTP 500',
    );

    // The rollback: what the server holds after a failed reload is not known, so it is loaded again.
    await bringIn(state, v1, effects, { stop: running(), supersede: running() });
    expect(calls.filter((c) => c.startsWith('load'))).toEqual(['load m1 replacing', 'load m1 replacing']);
    expect(state).toEqual(model(v1, v1));
  });

  it('loads the version before again after a reload that timed out (the server may have loaded the new one)', async () => {
    const timedOut = retryableError('timeout', 'model server load of "m1": timed out after 300000 ms');
    const { effects, calls } = recording({ load: { m1: [timedOut] } });
    const state = model(v1, v1);
    await expect(bringIn(state, v2, effects, { stop: running(), supersede: running() })).rejects.toBe(
      timedOut,
    );
    await bringIn(state, v1, effects, { stop: running(), supersede: running() });
    expect(calls.filter((c) => c.startsWith('load'))).toEqual(['load m1 replacing', 'load m1 replacing']);
    expect(state).toEqual(model(v1, v1));
  });

  it('loads another spec replacing after a load that got no answer (a timeout), the same spec not', async () => {
    const timedOut = () => retryableError('timeout', 'model server load of "m1": timed out after 300000 ms');
    const answered = retryableError('http-status', 'HTTP 500');
    const { effects, calls } = recording({ load: { m1: [timedOut(), answered] } });
    const state = model();
    const attempt = (target: ModelSpec) =>
      bringIn(state, target, effects, { stop: running(), supersede: running() });
    await expect(attempt(v1)).rejects.toThrow('timed out');
    expect(state).toEqual({ ...model(v1), unanswered: v1 });

    // The same spec again: the server may still be loading it (TorchServe answers 409, taken as loaded). A failure
    // with an answer says nothing of the load that got none.
    await expect(attempt(v1)).rejects.toBe(answered);
    expect(state.unanswered).toBe(v1);
    // A new spec meanwhile: TorchServe may have registered the old files; a replacing load re-registers them.
    await attempt(v2);
    expect(calls.filter((c) => c.startsWith('load'))).toEqual(['load m1', 'load m1', 'load m1 replacing']);
    expect(state).toEqual(model(v2, v2));
    expect(state.unanswered).toBeUndefined();
  });

  it('lets a newer spec abort a download, and a load not sent yet, but not a load sent', async () => {
    const download = recording();
    const downloading = model();
    await expect(
      bringIn(downloading, v1, download.effects, { stop: running(), supersede: aborted() }),
    ).rejects.toThrow('superseded');
    expect(download.calls).toEqual(['report m1 Downloading /models/v1']);
    expect(downloading).toEqual(model());

    const waiting = recording();
    const onDisk = model(v1);
    await expect(
      bringIn(onDisk, v1, waiting.effects, { stop: running(), supersede: aborted() }),
    ).rejects.toThrow('superseded');
    expect(waiting.calls).not.toContain('load m1');
    expect(onDisk).toEqual(model(v1));

    const load = recording();
    const newer = new AbortController();
    const sent: ReconcileEffects = {
      ...load.effects,
      server: {
        ...load.effects.server,
        load: async (...args) => {
          newer.abort(new Error('superseded')); // a newer spec comes while the load is in flight
          await load.effects.server.load(...args);
        },
      },
    };
    await bringIn(model(v1), v1, sent, { stop: running(), supersede: newer.signal });
    expect(load.calls).toContain('load m1');
  });

  it('asks the download for the spec’s files and offers it the files of the same content on disk', async () => {
    const { effects, calls } = recording();
    const requests: Array<DownloadRequest | undefined> = [];
    const fills: string[] = [];
    const selected: ModelSpec = { ...v1, selection: { allowPatterns: ['*.json'] } };
    const content = createContentSharing({
      store: {
        fillFrom: (source) => {
          fills.push(source);
          return Promise.resolve({ files: 1, linkedBytes: 0, clonedBytes: 0, copiedBytes: 1 });
        },
      },
      log: pino({ level: 'silent' }),
    });
    const offering: ReconcileEffects = {
      ...effects,
      content,
      download: async (_uri, _dir, _signal, _progress, request) => {
        requests.push(request);
        await request?.reuse?.('etag-1');
      },
    };

    await bringIn(model(), selected, offering, { stop: running(), supersede: running() });
    await bringIn({ ...model(), name: name('m2') }, selected, offering, {
      stop: running(),
      supersede: running(),
    });

    expect(requests.map((request) => request?.select)).toEqual([selected.selection, selected.selection]);
    expect(fills).toEqual(['m1']); // the second one was offered what the first installed
    expect(calls.filter((call) => call.includes('Loading'))).toEqual([
      'report m1 Loading /models/v1 (files from storage)',
      'report m2 Loading /models/v1 (files from model)',
    ]);
  });

  it('stops before a step when the stop signal is aborted', async () => {
    const { effects, calls } = recording();
    await expect(
      bringIn(model(v1), v1, effects, { stop: aborted(), supersede: running() }),
    ).rejects.toThrow();
    expect(calls).toEqual(['report m1 Loading /models/v1']);
  });
});

describe('takeOut', () => {
  it('unloads, deletes the files, clears the journal and reports Removed', async () => {
    const { effects, calls } = recording();
    const state = model(v1, v1);

    await takeOut(state, effects, running());

    expect(calls).toEqual([
      'report m1 Unloading',
      'unload m1',
      'remove m1',
      'journal confirmed m1',
      'report m1 Removed',
    ]);
    expect(state).toEqual(model());
  });

  it('only unloads a model that is loaded but not on disk', async () => {
    const { effects, calls } = recording();
    await takeOut({ name: m1, onDisk: undefined, loaded: true, loadedSpec: undefined }, effects, running());
    expect(calls).toEqual(['report m1 Unloading', 'unload m1', 'report m1 Removed']);
  });
});

describe('isInPlace', () => {
  it.each<[string, ModelState, ModelSpec | undefined, boolean]>([
    ['in place: nothing there, nothing wanted', model(), undefined, true],
    ['not in place: on disk, nothing wanted', model(v1), undefined, false],
    ['not in place: loaded without files, nothing wanted', { ...model(), loaded: true }, undefined, false],
    ['in place: on disk and loaded, that spec wanted', model(v1, v1), v1, true],
    ['not in place: on disk only, that spec wanted', model(v1), v1, false],
    ['not in place: on disk and loaded, another spec wanted', model(v1, v1), v2, false],
    ['not in place: the new version on disk, the old one loaded', model(v2, v1), v2, false],
  ])('%s', (_, state, desired, expected) => {
    expect(isInPlace(state, desired)).toBe(expected);
  });
});
