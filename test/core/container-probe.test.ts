/** SERVING_READINESS_PROBE as KServe's webhook writes it (json.Marshal of a corev1.Probe) and as Knative does. */
import * as E from 'fp-ts/Either';
import { decodeReadinessProbes, type ContainerProbe } from '../../src/core/container-probe';

const probes = (text: string, componentPort = 8080): ReadonlyArray<ContainerProbe> => {
  const decoded = decodeReadinessProbes(text, componentPort);
  if (E.isLeft(decoded)) throw new Error(decoded.left);
  return decoded.right;
};

const problem = (text: string): string => {
  const decoded = decodeReadinessProbes(text, 8080);
  if (E.isRight(decoded)) throw new Error(`expected a problem, got ${JSON.stringify(decoded.right)}`);
  return decoded.left;
};

describe('decodeReadinessProbes', () => {
  it("takes a RawDeployment user container's httpGet probe, defaulted by the API server", () => {
    const text = JSON.stringify({
      httpGet: { path: '/v2/health/ready', port: 8080, scheme: 'HTTP' },
      timeoutSeconds: 2,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(probes(text)).toEqual([
      {
        action: {
          kind: 'http',
          scheme: 'http',
          host: '127.0.0.1',
          port: 8080,
          path: '/v2/health/ready',
          headers: [],
        },
        timeoutMs: 2000,
        periodSeconds: 10,
        successThreshold: 1,
        failureThreshold: 3,
      },
    ]);
  });

  it("takes Knative's own form: a host, K-Kubelet-Probe header, no period (aggressive)", () => {
    const text =
      '{"httpGet":{"port":8090,"host":"127.0.0.1","scheme":"HTTP","httpHeaders":[{"name":"K-Kubelet-Probe","value":"queue"}]},"successThreshold":1}';
    expect(probes(text)).toEqual([
      {
        action: {
          kind: 'http',
          scheme: 'http',
          host: '127.0.0.1',
          port: 8090,
          path: '/',
          headers: [['K-Kubelet-Probe', 'queue']],
        },
        timeoutMs: 1000,
        periodSeconds: 0,
        successThreshold: 1,
        failureThreshold: 3,
      },
    ]);
  });

  it('takes tcpSocket, a port as text, a named port as the component port, HTTPS, and a JSON array of probes', () => {
    expect(probes('{"tcpSocket":{"port":"8085"},"periodSeconds":5}')[0]!.action).toEqual({
      kind: 'tcp',
      host: '127.0.0.1',
      port: 8085,
    });
    expect(probes('{"httpGet":{"port":"http1","path":"healthz"}}', 8012)[0]!.action).toMatchObject({
      port: 8012,
      path: '/healthz',
    });
    expect(probes('{"httpGet":{"port":443,"scheme":"HTTPS"}}')[0]!.action).toMatchObject({ scheme: 'https' });
    const several = probes('[{"tcpSocket":{"port":8080}},{"httpGet":{"port":8081,"path":"/ready"}}]');
    expect(several.map((probe) => probe.action.kind)).toEqual(['tcp', 'http']);
  });

  it('reads an empty value as no probe', () => {
    expect(probes('')).toEqual([]);
    expect(probes('  ')).toEqual([]);
    expect(probes('[]')).toEqual([]);
  });

  it('names the field of every problem', () => {
    expect(problem('{"httpGet":')).toBe(
      'line 1, column 12: the file ends before the JSON is complete (it may be cut short)',
    );
    expect(problem('{"exec":{"command":["true"]}}')).toBe(
      "exec: exec probes are not supported (KServe's agent takes httpGet and tcpSocket only)",
    );
    expect(problem('{"grpc":{"port":9000}}')).toMatch(/^grpc: grpc probes are not supported/);
    expect(problem('{"periodSeconds":1}')).toBe('the probe: expected httpGet or tcpSocket');
    expect(problem('{"httpGet":{"port":70000}}')).toBe(
      'httpGet.port: expected a port number from 1 to 65535 or a port name, got 70000',
    );
    expect(problem('{"httpGet":{"port":8080,"scheme":"FTP"}}')).toBe(
      'httpGet.scheme: expected HTTP or HTTPS, got "FTP"',
    );
    expect(problem('[{"tcpSocket":{"port":1}},{"tcpSocket":{"port":1},"timeoutSeconds":-1}]')).toBe(
      '[1].timeoutSeconds: expected a whole number from 0 to 3600, got -1',
    );
    expect(
      problem('{"httpGet":{"port":8080,"httpHeaders":[{"name":"X","value":"a\\r\\nInjected: 1"}]}}'),
    ).toBe('httpGet.httpHeaders[0]: expected {name, value}: a header name and a one-line value');
    expect(problem('"probe"')).toBe('the probe: expected an object (a corev1.Probe)');
    expect(problem(`{"httpGet":{"port":8080,"path":"${'a'.repeat(70_000)}"}}`)).toMatch(/^longer than 65536/);
  });
});
