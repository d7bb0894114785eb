/**
 * The model dir's mount stops answering (a real FUSE mount over it whose daemon never answers, as a dead NFS server
 * or a stuck FUSE daemon): the store's calls fail with a retryable error naming the dir instead of holding their
 * model's work for good, new calls fail at once (no more of libuv's threads taken), and once the mount answers again
 * the store works as before. The storage initializer's dest likewise, and its process ends; and a `pvc://` or local
 * source on such a mount (a hung NFS claim).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { loadJournal, loadJournalFileName } from '../../../src/model-dir/load-journal';
import { modelDirStore } from '../../../src/model-dir/store';
import { localFileStorage, pvcStorage } from '../../../src/storage/local/local-storage';
import { sourceWatches } from '../../../src/storage/local/source-watch';
import { within } from '../../../src/core/waits';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { startHttpServer } from '../../../src/testing/http-server';
import { startV2ModelServer } from '../../../src/testing/v2-model-server';
import { startAgentHarness, type AgentHarness } from '../../helpers/agent-harness';
import { killAllCli, runCli, startCli } from '../../helpers/cli-process';
import { eventually } from '../../helpers/eventually';
import { modelsJson, name, spec } from '../../helpers/fixtures';
import { hangMount, type HungMount } from '../../helpers/hung-mount';
import { install } from '../../helpers/install';
import { atLevel, LogSink } from '../../helpers/log-sink';
import { startStorageServer } from '../../helpers/storage-server';
import { useTempDir } from '../../helpers/temp-dir';

const tmp = useTempDir('hung-mount');
const specA = spec('s3://models/a');
const specB = spec('s3://models/b');
const fill = async (dir: string): Promise<void> => writeFile(join(dir, 'model.bin'), 'weights');

/**
 * What `call` on the hung mount ended with: its error, `done`, or `still waiting` after a wait far past the watches'
 * 350 ms, so that a call that hangs fails the test and the mount is still released.
 */
const outcome = (call: Promise<unknown>): Promise<unknown> =>
  within(
    call.then(
      () => 'done',
      (error: unknown) => error,
    ),
    10_000,
    () => 'still waiting after 10 s',
  );

it('fails the calls on a model dir whose mount hangs, and works again once it answers', async () => {
  const root = join(tmp.path, 'models');
  await mkdir(root);
  const sink = new LogSink();
  const store = modelDirStore({
    root,
    log: pino({ level: 'debug' }, sink),
    mountCheck: { checkEveryMs: 50, answerWithinMs: 300 },
  });
  const signal = new AbortController().signal;
  await store.recover();
  await install(store, name('a'), specA, fill, signal);

  const mount = await hangMount(root);
  try {
    const failure = await outcome(store.stage(name('b'), specB, signal));
    expect(failure).toMatchObject({
      kind: 'timeout',
      retryable: true,
      message: expect.stringContaining(`the model dir ${root} does not answer`) as unknown,
    });
    // While it hangs, every call fails at once.
    await expect(store.isInstalled(name('a'), specA)).rejects.toMatchObject({ kind: 'timeout' });
    await expect(store.remove(name('a'))).rejects.toMatchObject({ kind: 'timeout' });
    expect(sink.lines.filter(atLevel('error'))).toEqual([
      expect.objectContaining({
        component: 'model-dir',
        dir: root,
        msg: expect.stringMatching(/hung mount/) as unknown,
      }),
    ]);
  } finally {
    await mount.release();
  }

  await eventually('the store answering again', () => store.isInstalled(name('a'), specA));
  await install(store, name('b'), specB, fill, signal);
  await expect(store.isInstalled(name('b'), specB)).resolves.toBe(true);
  expect(sink.lines.filter(atLevel('warn')).map((line) => line.msg)).toContain('the model dir answers again');
});

it("fails the load journal's start-up read on a hung model dir, and reads it once the dir answers", async () => {
  const root = join(tmp.path, 'models');
  await mkdir(root);
  await writeFile(join(root, loadJournalFileName), '');
  const journal = loadJournal({ root, log: pino({ level: 'silent' }), writeTimeoutMs: 300 });
  const mount = await hangMount(root);
  try {
    await expect(journal.unconfirmed()).rejects.toMatchObject({
      kind: 'timeout',
      retryable: true,
      message: expect.stringContaining('cannot read the load journal') as unknown,
    });
    await expect(journal.unconfirmed()).rejects.toMatchObject({ kind: 'timeout' }); // a try again, waiting too
  } finally {
    await mount.release();
  }
  await eventually('the journal read', async () => (await journal.unconfirmed()).size === 0);
});

it('fails a node cache take on a cache dir whose mount hangs, naming it, with the model dir unharmed, and takes once it answers', async () => {
  const root = join(tmp.path, 'models');
  const cacheDir = join(tmp.path, 'cache');
  await Promise.all([mkdir(root), mkdir(cacheDir)]);
  const sink = new LogSink();
  const store = modelDirStore({
    root,
    log: pino({ level: 'debug' }, sink),
    nodeCache: { dir: cacheDir, maxBytes: 0, minFreeBytes: 0 },
    mountCheck: { checkEveryMs: 50, answerWithinMs: 300 },
  });
  const signal = new AbortController().signal;
  await store.recover();
  const staged = await store.stage(name('a'), specA, signal);

  const mount = await hangMount(cacheDir);
  try {
    // Before: the take waited for good (the model dir's watch asks the model dir, which answers).
    const failure = await outcome(store.nodeCache!.take('identity-a', staged, signal));
    expect(failure).toMatchObject({
      kind: 'timeout',
      message: expect.stringContaining(`the node cache dir ${cacheDir} does not answer`) as unknown,
    });
    // The model dir answers all along: the install goes on without the cache.
    await staged.abandon(new Error('downloading it instead'));
    await install(store, name('b'), specB, fill, signal);
    expect(await store.isInstalled(name('b'), specB)).toBe(true);
  } finally {
    await mount.release();
  }
  const again = await store.stage(name('a'), specA, signal);
  const took = await store.nodeCache!.take('identity-a', again, signal);
  expect(took._tag).toBe('Claimed');
  if (took._tag === 'Claimed') await took.release();
  await again.abandon(new Error('not downloaded'));
}, 60_000);

it('ends a node cache publish on a cache dir that hangs after the claim, as its contract says: no throw, nothing evicted', async () => {
  const root = join(tmp.path, 'models');
  const cacheDir = join(tmp.path, 'cache');
  await Promise.all([mkdir(root), mkdir(cacheDir)]);
  const store = modelDirStore({
    root,
    log: pino({ level: 'silent' }),
    nodeCache: { dir: cacheDir, maxBytes: 0, minFreeBytes: 0 },
    mountCheck: { checkEveryMs: 50, answerWithinMs: 300 },
  });
  const signal = new AbortController().signal;
  await store.recover();
  const staged = await store.stage(name('a'), specA, signal);
  const took = await store.nodeCache!.take('identity-a', staged, signal);
  if (took._tag !== 'Claimed') throw new Error(`expected a claim, got ${took._tag}`);
  await fill(staged.dir);
  await staged.commit();

  const mount = await hangMount(cacheDir);
  try {
    // Before: the publish (and the model's work awaiting it) waited for good.
    const published: unknown = await within<unknown>(
      took.publish(),
      10_000,
      () => 'still waiting after 10 s',
    );
    expect(published).toEqual({ evicted: 0 });
    expect(await store.isInstalled(name('a'), specA)).toBe(true);
  } finally {
    await mount.release();
  }
}, 60_000);

it('fails a copy from a pvc:// or local source whose volume hangs, naming it, the next at once, and copies once it answers', async () => {
  const claim = join(tmp.path, 'pvc');
  await mkdir(join(claim, 'models', 'm1'), { recursive: true });
  await writeFile(join(claim, 'models', 'm1', 'model.bin'), 'weights');
  const sink = new LogSink();
  const options = {
    sourceWatch: sourceWatches([claim], pino(sink), { checkEveryMs: 50, answerWithinMs: 300 }),
  };
  const pvc = pvcStorage({ root: claim, ...options });
  const local = localFileStorage({ roots: [claim], ...options });
  const targets = await Promise.all(
    ['t1', 't2', 't3'].map(async (t) => mkdir(join(tmp.path, t)).then(() => join(tmp.path, t))),
  );
  const signal = new AbortController().signal;

  const mount = await hangMount(claim);
  try {
    // Before: both waited for good, each holding its download slot and one of libuv's threads.
    expect(await outcome(pvc.download('pvc://claim/models/m1', targets[0]!, signal))).toMatchObject({
      kind: 'timeout',
      retryable: true,
      message: expect.stringContaining(`the source volume ${claim} does not answer`) as unknown,
    });
    expect(await outcome(local.download(join(claim, 'models', 'm1'), targets[1]!, signal))).toMatchObject({
      kind: 'timeout',
    });
    // One line: the local copy met the same volume's watch, already hung, and failed at once (a watch of its own
    // would have said so a second time).
    expect(sink.lines.filter(atLevel('error'))).toEqual([
      expect.objectContaining({
        dir: claim,
        msg: 'the source volume does not answer (a hung mount?); its calls fail',
      }),
    ]);
  } finally {
    await mount.release();
  }
  await pvc.download('pvc://claim/models/m1', targets[2]!, signal);
  expect(await readFile(join(targets[2]!, 'model.bin'), 'utf8')).toBe('weights');
}, 60_000);

describe('the whole agent', () => {
  let h: AgentHarness | undefined;
  let mount: HungMount | undefined;
  afterEach(async () => {
    await mount?.release();
    await h?.close();
  });

  it('reports a model whose install meets a hung model dir Failed, naming the dir, keeps the others loaded, and loads it once the dir answers', async () => {
    const agent = (h = await startAgentHarness({ retry: { baseMs: 10, maxMs: 40, maxAttempts: 3 } }));
    const uri = (model: string): Promise<string> =>
      agent.localModel(`models/${model}`, { 'model.bin': model });
    agent.write(modelsJson({ m1: await uri('m1') }));
    await agent.waitForPhase('m1', 'Loaded');
    await agent.waitForIdle();

    mount = await hangMount(agent.modelDir);
    agent.write(modelsJson({ m1: await uri('m1'), m2: await uri('m2') }));
    // The default watch: a question every 10 s, 20 s to answer it; then the retries fail at once.
    const failed = await agent.waitForPhase('m2', 'Failed', 60_000);
    expect(failed).toMatchObject({
      errorKind: 'timeout',
      reason: expect.stringContaining(`the model dir ${agent.modelDir} does not answer`) as unknown,
    });
    expect(agent.phases('m2').join(' ')).toBe('Downloading Retrying Downloading Retrying Downloading Failed');
    expect(agent.standIn.loaded).toEqual(new Set(['m1']));

    await mount.release();
    await agent.restart();
    await agent.waitForPhase('m2', 'Loaded');
    expect(agent.standIn.loaded).toEqual(new Set(['m1', 'm2']));
  }, 120_000);

  it('ends a download in flight when the model dir stops answering, as its writes would never return, within the watch', async () => {
    const agent = (h = await startAgentHarness({ retry: { baseMs: 10, maxMs: 40, maxAttempts: 1 } }));
    // A model that never ends but never stalls either: a byte every 100 ms of a declared 1 GiB.
    const drip = await startHttpServer((_req, res) => {
      res.writeHead(200, { 'content-length': 2 ** 30 });
      const timer = setInterval(() => res.write('x'), 100);
      res.on('close', () => clearInterval(timer));
    });
    try {
      agent.write(modelsJson({ m1: `${drip.url}/m1.bin` }));
      await agent.waitForPhase('m1', 'Downloading');
      mount = await hangMount(agent.modelDir);
      // The default watch: a question every 10 s, 20 s to answer it. Before, the download went on for good: a write on a
      // hung mount never returns (here the writes go through the staging dir's handle, under the mount, and do).
      const failed = await agent.waitForPhase('m1', 'Failed', 60_000);
      expect(failed).toMatchObject({
        errorKind: 'timeout',
        reason: expect.stringContaining(`the model dir ${agent.modelDir} does not answer`) as unknown,
      });
      expect(agent.standIn.loaded).toEqual(new Set());
    } finally {
      await drip.close();
    }
  }, 120_000);
});

describe('the processes', () => {
  let mount: HungMount | undefined;
  afterEach(async () => {
    await killAllCli();
    await mount?.release();
  });

  it("fails the storage initializer's pair whose dest hangs, naming the dest, and ends: Node.js cannot exit then, so it kills itself, saying so", async () => {
    const storage = await startStorageServer();
    try {
      storage.file('/model.bin', 'weights');
      const mnt = join(tmp.path, 'mnt');
      await mkdir(mnt);
      const dest = join(mnt, 'models');
      mount = await hangMount(mnt);

      // The default watch: a question every 10 s, 20 s to answer it; the second attempt fails at once.
      const result = await runCli(['--max-attempts', '2', `${storage.url}/model.bin`, dest], {
        timeoutMs: 90_000,
      });

      // Before: no line after "starting", and no end (an init container that never finishes).
      expect(result.signal).toBe('SIGKILL');
      const errors = result.stderr.lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter(atLevel('error'));
      expect(errors).toEqual([
        expect.objectContaining({
          dir: dest,
          msg: 'the dest does not answer (a hung mount?); its calls fail',
        }),
        expect.objectContaining({
          dest,
          errorKind: 'timeout',
          reason: expect.stringContaining(`the dest ${dest} does not answer`) as unknown,
        }),
        expect.objectContaining({
          dirs: [dest],
          exitCode: 1,
          msg: expect.stringMatching(
            /^exiting with SIGKILL: a call on a mount that does not answer/,
          ) as unknown,
        }),
      ]);
    } finally {
      await storage.close();
    }
  }, 120_000);

  it('stops the agent process on SIGTERM while its model dir does not answer: one line saying so, then it kills itself', async () => {
    const storage = await startStorageServer();
    const modelDir = join(tmp.path, 'models');
    await mkdir(modelDir);
    const standIn = await startV2ModelServer({ modelDir });
    try {
      storage.file('/m2.bin', 'weights');
      const configDir = join(tmp.path, 'config');
      atomicWrite(configDir, { 'models.json': '[]' });
      const flags = ['--config-dir', configDir, '--model-dir', modelDir, '--server-url', standIn.url];
      const cli = startCli([...flags, '--http-port', '0', '--max-attempts', '1', '--shutdown-timeout', '2s']);
      await cli.waitForLog('start-up sync complete; ready', 30_000);

      mount = await hangMount(modelDir);
      atomicWrite(configDir, { 'models.json': modelsJson({ m2: `${storage.url}/m2.bin` }) });
      await cli.waitForLog('the model dir does not answer (a hung mount?); its calls fail', 60_000);
      // Before: process.exit waited for the hung call's thread, until the kubelet's SIGKILL.
      const exit = await cli.signalAndWait('SIGTERM', 20_000);

      expect(exit.signal).toBe('SIGKILL');
      expect(cli.logs.at(-1)).toMatchObject({
        level: 'error',
        dirs: [modelDir],
        exitCode: 0,
        msg: expect.stringMatching(/^exiting with SIGKILL/) as unknown,
      });
    } finally {
      await standIn.close();
      await storage.close();
    }
  }, 120_000);
});
