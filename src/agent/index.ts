/**
 * The agent: the one start-up sequence (`startAgent`) and the composed pipeline it runs (`syncModels`, resync).
 * It imports no effect: only the pipeline, the loader, core and the ports.
 */
export { abortable } from './abortable';
export { type AgentCapabilities, type AgentSettings, type AgentStart, startAgent } from './start-agent';
export { ModelDirUnusable, ServerNotAnswering } from './start-errors';
export {
  acceptedSnapshots,
  type ConfigPipelineDeps,
  currentModelOps,
  modelOps,
  type SyncDeps,
  syncModels,
} from './sync-models';
