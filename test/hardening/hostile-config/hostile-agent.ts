/**
 * The hostile-config suite's one agent per file and its check of a bad edit: the loaded model stays, exactly one
 * warn line names the file (and the field), and the next valid config is applied.
 */
import { rename, rm, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { waitFor } from '../../../src/testing/wait';
import { startAgentHarness, type AgentHarness } from '../../helpers/agent-harness';
import { atLeast, type LogLine } from '../../helpers/log-sink';

/** The message of the line keepValid logs for a rejected config. */
export const rejectedMessage = 'config rejected; keeping the previous models';

/** One kind of bad config: how to make it, and what its one log line must say. */
export interface BadConfig {
  readonly kind: string;
  /** models.json as kubelet would publish it (a ConfigMap update); or `apply` makes the bad state. */
  readonly payload?: string | Buffer;
  readonly apply?: (configDir: string) => Promise<void> | void;
  /** What the line's reason must contain: the field path and what is wrong with it, or what the file is. */
  readonly says: string;
  /** Removes what `apply` left beside kubelet's entries, once the next valid config is in force. */
  readonly tidy?: (configDir: string) => Promise<void> | void;
}

/** A config that is odd but valid (KServe accepts it): it must be applied without a warning. */
export interface OddConfig {
  readonly kind: string;
  /** models.json for the models `keep` and `probe` (their URIs given). */
  readonly payload: (keepUri: string, probeUri: string, probe: string) => string | Buffer;
}

const entry = (name: string, uri: string): object => ({
  modelName: name,
  modelSpec: { storageUri: uri, framework: 'sklearn' },
});

/** A running agent with the model `keep` loaded, and a local model to add as `probe-<n>` after each case. */
export interface HostileAgent {
  readonly h: AgentHarness;
  readonly keepUri: string;
  readonly probeUri: string;
  /** Makes `bad`, then applies a valid config, and checks what the agent did meanwhile (see the file comment). */
  rejects(bad: BadConfig): Promise<void>;
  /** Writes the odd but valid config and checks that it is applied without a warn line. */
  accepts(odd: OddConfig): Promise<void>;
}

/** For a test file: one agent for all its cases (beforeAll), closed after them. */
export const useHostileAgent = (): { readonly agent: HostileAgent } => {
  let current: HostileAgent | undefined;
  let round = 0;
  beforeAll(async () => {
    let keepUri = '';
    let probeUri = '';
    const h = await startAgentHarness({
      setup: async (harness) => {
        keepUri = await harness.localModel('keep', { 'model.bin': 'keep' });
        probeUri = await harness.localModel('probe', { 'model.bin': 'probe' });
        harness.write(JSON.stringify([entry('keep', keepUri)]));
      },
    });
    await h.waitForPhase('keep', 'Loaded');

    /** Lines from `from` on up to the first `config accepted` of two models, which must come. */
    const untilAccepted = async (from: number): Promise<LogLine[]> => {
      const accepted = (line: LogLine): boolean => line.msg === 'config accepted' && line['modelCount'] === 2;
      await waitFor(() => h.sink.lines.slice(from).some(accepted), 20_000, 'the valid config to be accepted');
      const lines = h.sink.lines.slice(from);
      return lines.slice(0, lines.findIndex(accepted));
    };
    const keepStayed = (): void => {
      expect(h.standIn.loaded.has('keep')).toBe(true);
      expect(h.unloadRequests('keep')).toEqual([]);
    };
    const applyValid = async (payload: string | Buffer, probe: string): Promise<void> => {
      atomicWrite(h.configDir, { 'models.json': payload });
      await h.waitForPhase(probe, 'Loaded');
    };

    current = {
      h,
      keepUri,
      probeUri,
      rejects: async (bad) => {
        const from = h.sink.lines.length;
        const probe = `probe-${++round}`;
        if (bad.payload !== undefined) atomicWrite(h.configDir, { 'models.json': bad.payload });
        await bad.apply?.(h.configDir);
        await waitFor(
          () => h.sink.lines.slice(from).some((line) => line.msg === rejectedMessage),
          20_000,
          `the rejection of ${bad.kind}`,
        );
        await applyValid(JSON.stringify([entry('keep', keepUri), entry(probe, probeUri)]), probe);
        await bad.tidy?.(h.configDir);
        const problems = (await untilAccepted(from)).filter(atLeast('warn'));
        expect(problems).toHaveLength(1);
        expect(problems[0]).toMatchObject({ msg: rejectedMessage, file: join(h.configDir, 'models.json') });
        expect(problems[0]!['reason']).toContain(bad.says);
        keepStayed();
      },
      accepts: async (odd) => {
        const from = h.sink.lines.length;
        const probe = `probe-${++round}`;
        await applyValid(odd.payload(keepUri, probeUri, probe), probe);
        expect((await untilAccepted(from)).filter(atLeast('warn'))).toEqual([]);
        keepStayed();
      },
    };
  }, 60_000);
  afterAll(async () => {
    await current?.h.close();
  });
  return {
    get agent(): HostileAgent {
      if (current === undefined) throw new Error('the hostile agent did not start');
      return current;
    },
  };
};

/** One test per row of `table`: each kind is refused with one line while the loaded model stays. */
export const itRefusesEach = (
  hostile: { readonly agent: HostileAgent },
  table: ReadonlyArray<BadConfig>,
): void =>
  it.each(table.map((bad) => [bad.kind, bad] as const))(
    'refuses %s with one line and keeps the models',
    (_, bad) => hostile.agent.rejects(bad),
  );

/** One test per row of `table`: each odd but valid config is applied without a warning. */
export const itAppliesEach = (
  hostile: { readonly agent: HostileAgent },
  table: ReadonlyArray<OddConfig>,
): void =>
  it.each(table.map((odd) => [odd.kind, odd] as const))('applies a config with %s and no warning', (_, odd) =>
    hostile.agent.accepts(odd),
  );

/** models.json for kubelet's entries: the valid config's `models.json` link and `..data` stay as kubelet left them. */
const modelsJson = (configDir: string): string => join(configDir, 'models.json');

/**
 * Turns the kubelet-managed dir into a plain one whose models.json is what `make` creates: the entry is made
 * under a name the watcher ignores and renamed into place while `..data` still serves the old version (so that
 * step reads the same bytes and says nothing), then `..data` goes and the next read meets the entry.
 */
export const plainModelsJson =
  (make: (path: string) => Promise<void>) =>
  async (configDir: string): Promise<void> => {
    const staged = join(configDir, 'staged.tmp');
    await make(staged);
    await rm(modelsJson(configDir), { force: true }); // kubelet's link, unless the last case removed it
    await rename(staged, modelsJson(configDir));
    await unlink(join(configDir, '..data'));
  };

/** Removes the plain models.json `plainModelsJson` made (kubelet's next write puts its link back). */
export const removePlainModelsJson = (configDir: string): Promise<void> =>
  rm(modelsJson(configDir), { recursive: true, force: true });

/** Re-points `..data` at `target` atomically, as kubelet does, but at something kubelet never would. */
export const repointDataLink = async (configDir: string, target: string): Promise<void> => {
  const staged = join(configDir, 'staged-link.tmp');
  await symlink(target, staged);
  await rename(staged, join(configDir, '..data'));
};
