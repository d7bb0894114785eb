/**
 * The world one conformance scenario runs in: a model server (real or its stand-in) on a fresh model dir, the
 * real modelsync CLI beside it, a kubelet-style config dir, and the fixture models as local storage.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelStatusJson } from '../../../src/core/status-document';
import { atomicWrite } from '../../../src/testing/atomic-writer';
import { cliArgs, startCli, type CliFlags, type CliProcess } from '../../helpers/cli-process';
import { eventually } from '../../helpers/eventually';
import { modelsJson } from '../../helpers/fixtures';
import { freePort, getJson } from '../../integration/surface-kit';
import { fixtureModel, type FixtureVariant } from '../../real-servers/models';
import { modelsDir } from '../../real-servers/paths';
import type { RealServerKind } from '../../real-servers/servers';
import type { Target } from './targets';

/** A scenario's world; `close` stops the agent and the server and removes the dirs. */
export interface World {
  readonly target: Target;
  readonly configDir: string;
  /** Lists `models` (name → fixture variant) in models.json, as the kubelet swaps a ConfigMap in. */
  configure(models: Readonly<Record<string, FixtureVariant>>): void;
  /** Starts the agent (`flags` on top of the world's); a second call starts a second run, the first one ended. */
  startAgent(flags?: CliFlags): Promise<CliProcess>;
  readonly agent: () => CliProcess;
  /** A model's entry of the agent's /status (undefined while the agent does not list it). */
  status(name: string): Promise<ModelStatusJson | undefined>;
  /** Polls `check` until it returns true, failing with `what` and the agent's last lines after `timeoutMs`. */
  until(what: string, check: () => Promise<boolean>, timeoutMs?: number): Promise<void>;
  /** Resolves once each of `expected` (name → fixture number) serves that number. */
  serving(expected: Readonly<Record<string, number>>, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A world on the target `start` makes, in a fresh temp dir. */
export const world = async (
  kind: RealServerKind,
  start: (kind: RealServerKind, modelDir: string) => Promise<Target>,
): Promise<World> => {
  const root = await mkdtemp(join(tmpdir(), `modelsync-conformance-${kind}-`));
  const configDir = join(root, 'configs');
  const modelDir = join(root, 'models');
  await mkdir(modelDir);
  const target = await start(kind, modelDir);
  const agents: CliProcess[] = [];
  let httpPort = 0;
  const agent = (): CliProcess => {
    const last = agents.at(-1);
    if (last === undefined) throw new Error('the agent is not started');
    return last;
  };
  const until = (what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> =>
    eventually(`${target.label}: ${what}`, check, timeoutMs, () => agents.at(-1)?.transcript(30) ?? '');
  return {
    target,
    configDir,
    configure: (models) =>
      atomicWrite(configDir, {
        'models.json': modelsJson(
          Object.fromEntries(
            Object.entries(models).map(([name, variant]) => [
              name,
              { storageUri: fixtureModel(kind, variant), framework: kind },
            ]),
          ),
        ),
      }),
    startAgent: async (flags = {}) => {
      httpPort = await freePort();
      const cli = startCli(
        cliArgs({
          'config-dir': configDir,
          'model-dir': modelDir,
          'server-url': target.url,
          'server-kind': 'auto',
          'local-storage-roots': modelsDir,
          'http-port': httpPort,
          'retry-base-ms': 100,
          'retry-max-ms': 500,
          'resync-interval': '2s',
          'log-format': 'json',
          ...flags,
        }),
      );
      agents.push(cli);
      return cli;
    },
    agent,
    status: async (name) => {
      const { status, json } = await getJson<ModelStatusJson>(
        httpPort,
        `/status/${encodeURIComponent(name)}`,
      );
      return status === 200 ? json : undefined;
    },
    until,
    serving: (expected, timeoutMs) =>
      until(
        `serving ${JSON.stringify(expected)}`,
        async () => {
          for (const [name, value] of Object.entries(expected))
            if ((await target.infer(name)) !== value) return false;
          return true;
        },
        timeoutMs,
      ),
    close: async () => {
      for (const cli of agents) await cli.signalAndWait('SIGKILL').catch(() => undefined);
      await target.stop();
      if (existsSync(root)) await rm(root, { recursive: true, force: true });
    },
  };
};
