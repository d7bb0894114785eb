/**
 * What the conformance suite runs its scenarios against: a real server (test/real-servers/, started from its
 * deploy overlay) or the V2 stand-in playing that server's profile, on the same fixture models, behind one face.
 */
import { startV2ModelServer, type V2ModelServerStandIn } from '../../../src/testing/v2-model-server';
import { httpCall } from '../../real-servers/http';
import { infer, loadedModels } from '../../real-servers/models';
import { freePorts, startRealServer, type RealServer, type RealServerKind } from '../../real-servers/servers';

/** Where a model stands on a server, as its index (or KServe's model list) tells. */
export type ServerState = 'loaded' | 'loading' | 'unloading' | 'gone';

/** One server the scenarios run against. */
export interface Target {
  readonly kind: RealServerKind;
  /** `triton`, or `triton stand-in`. */
  readonly label: string;
  readonly real: boolean;
  readonly url: string;
  readonly modelDir: string;
  /** The fixture's number the model answers (1 for v1, 2 for v2); rejects when it does not serve. */
  infer(name: string): Promise<number>;
  /** Where `name` stands on the server now. */
  state(name: string): Promise<ServerState>;
  /** The models the server says are loaded. */
  loaded(): Promise<string[]>;
  /** Stops the server and starts it again, empty, at the same URL (as a container restart does). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Where `name` stands by the index: Triton's states, or loaded/gone for servers that list only what they hold. */
const stateOf = async (target: Pick<Target, 'kind' | 'url'>, name: string): Promise<ServerState> => {
  if (target.kind !== 'triton') return (await loadedModels(target)).includes(name) ? 'loaded' : 'gone';
  const answer = await httpCall('POST', `${target.url}/v2/repository/index`, {});
  const entries = JSON.parse(answer.body) as Array<{ name: string; state?: string }>;
  const states = entries.filter((entry) => entry.name === name).map((entry) => entry.state);
  if (states.includes('READY')) return 'loaded';
  if (states.includes('UNLOADING')) return 'unloading';
  if (states.includes('LOADING')) return 'loading';
  return 'gone';
};

/** A real `kind` on `modelDir`. */
export const realTarget = async (kind: RealServerKind, modelDir: string): Promise<Target> => {
  const server: RealServer = await startRealServer(kind, { modelDir });
  const address = { kind, url: server.url };
  return {
    kind,
    label: kind,
    real: true,
    url: server.url,
    modelDir,
    infer: (name) => infer(address, name),
    state: (name) => stateOf(address, name),
    loaded: () => loadedModels(address),
    restart: () => server.restart(),
    stop: async () => void (await server.stop()),
  };
};

/** The stand-in playing `kind`'s profile on `modelDir`. */
export const standInTarget = async (kind: RealServerKind, modelDir: string): Promise<Target> => {
  // A port outside the ephemeral range, so nothing takes it while the stand-in is down for a restart.
  const [port] = (await freePorts(1)) as [number];
  let standIn: V2ModelServerStandIn = await startV2ModelServer({ modelDir, profile: kind, port });
  const url = standIn.url;
  const address = { kind, url };
  return {
    kind,
    label: `${kind} stand-in`,
    real: false,
    url,
    modelDir,
    infer: (name) => infer(address, name),
    state: (name) => stateOf(address, name),
    loaded: () => loadedModels(address),
    restart: async () => {
      await standIn.close();
      standIn = await startV2ModelServer({ modelDir, profile: kind, port });
    },
    stop: () => standIn.close(),
  };
};
