/**
 * The e2e project's globalSetup: what the e2e tests run, installed by the project's own scripts the first time on
 * a machine (their output goes straight to the run's stdout/stderr, so a CI log shows the progress and why one
 * failed) and a no-op of well under a second after: the real model servers and their fixture models
 * (real-servers/global-setup.ts, about 2 minutes cold) and the real control plane, etcd, kube-apiserver, kubectl
 * and KServe's manager (control-plane/control-plane.ts, about 14 CPU-minutes cold).
 */
import { controlPlaneBinaries } from './control-plane/control-plane';
import { ensureRealServers } from './real-servers/global-setup';

export default function globalSetup(): void {
  ensureRealServers();
  controlPlaneBinaries();
}
