/** Which requests to KServe's agent port are readiness checks, network probes, or the model server's. */
import { classifyAgentPortRequest } from '../../src/surface/agent-port-handler';
import { isSurfacePath } from '../../src/surface/http-surface';

describe('classifyAgentPortRequest', () => {
  it("takes the kubelet's probe with K-Network-Probe: queue as the readiness check, on any path", () => {
    expect(classifyAgentPortRequest({ 'user-agent': 'kube-probe/1.31', 'k-network-probe': 'queue' })).toEqual(
      {
        kind: 'readiness',
      },
    );
    expect(classifyAgentPortRequest({ 'k-kubelet-probe': 'queue', 'k-network-probe': 'queue' })).toEqual({
      kind: 'readiness',
    });
    expect(
      classifyAgentPortRequest({ 'user-agent': 'Knative-Activator-Probe', 'k-network-probe': 'queue' }),
    ).toEqual({ kind: 'readiness' });
  });

  it("answers a kubelet probe without K-Network-Probe: queue as a bad probe (Knative's 400)", () => {
    expect(classifyAgentPortRequest({ 'user-agent': 'kube-probe/1.31' })).toEqual({
      kind: 'bad-probe-header',
      value: '',
    });
    expect(classifyAgentPortRequest({ 'user-agent': 'kube-probe/1.31', 'k-network-probe': 'probe' })).toEqual(
      {
        kind: 'bad-probe-header',
        value: 'probe',
      },
    );
  });

  it("takes K-Network-Probe: probe from anyone else as Knative's network probe", () => {
    expect(classifyAgentPortRequest({ 'k-network-probe': 'probe', 'k-network-hash': 'abc' })).toEqual({
      kind: 'network-probe',
      hash: 'abc',
    });
  });

  it('proxies everything else, K-Network-Probe: queue from a client that is not the kubelet included', () => {
    expect(classifyAgentPortRequest({ 'k-network-probe': 'queue' })).toEqual({ kind: 'proxy' });
    expect(classifyAgentPortRequest({ 'user-agent': 'curl/8.5.0' })).toEqual({ kind: 'proxy' });
    expect(classifyAgentPortRequest({})).toEqual({ kind: 'proxy' });
  });
});

describe('isSurfacePath', () => {
  it("keeps the surface's own paths, and only them, in front of the proxy", () => {
    for (const own of ['/healthz', '/readyz', '/metrics', '/status', '/status/iris'])
      expect(isSurfacePath(own)).toBe(true);
    for (const theirs of [
      '/',
      '/v2/health/ready',
      '/v1/models/iris:predict',
      '/healthz/x',
      '/statusz',
      '/metrics/',
    ])
      expect(isSurfacePath(theirs)).toBe(false);
  });
});
