/**
 * deploy/: every variant renders (test-only kustomize), every object is valid against the Kubernetes schemas
 * with no unknown field, and the pod is what docs/operating.md promises: real flags with valid values, probes on
 * modelsync's port and paths, a locked-down modelsync, the ConfigMap dir mounted whole, a shared model dir.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { either as E } from 'fp-ts';
import type { IContainer } from 'kubernetes-models/v1';
import { defaultAppConfig } from '../../src/core/flags/app-config';
import { decodeConfig } from '../../src/core/decode-config';
import { surfacePaths } from '../../src/surface/http-surface';
import { renderKustomization, type KubeObject } from './kustomize';
import { schemaProblems, typeProblems } from './kubernetes-schemas';
import { allContainers, containerNamed, deploymentOf, podSpecOf, probePort, settingsOf } from './pod';
import { variants, withVariantDir, writesEvents } from './variants';

const surface = surfacePaths;

const packageVersion = (
  JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

const rendered = variants.map((variant) => ({
  variant,
  objects: withVariantDir(variant, (dir) => renderKustomization(dir)),
}));

describe('deploy/ manifests', () => {
  it('renders every variant to a ConfigMap of models, a Deployment and what its components add', () => {
    for (const { objects } of rendered)
      expect(objects.map((object) => object.kind)).toEqual(
        expect.arrayContaining(['ConfigMap', 'Deployment']),
      );
    expect(rendered.map(({ variant }) => variant.name)).toContain('triton-native-sidecar');
  });

  it('has no field that its kind does not know, in any object of any variant', () => {
    const objects = rendered.flatMap(({ objects: list }) => list);
    const labels = rendered.flatMap(({ variant, objects: list }) =>
      list.map((object) => `${variant.name}: ${object.kind} ${object.metadata.name}`),
    );
    expect(typeProblems(objects, labels)).toEqual([]);
  });
});

describe.each(
  rendered.map(({ variant, objects }) => [variant.name, objects, writesEvents(variant)] as const),
)('%s', (variantName, objects, events) => {
  const pod = podSpecOf(deploymentOf(objects));
  const { container: modelsync, init } = containerNamed(pod, 'modelsync');
  const { container: server } = containerNamed(pod, 'model-server');
  const settings = settingsOf(modelsync);
  // A parse failure fails its own test below; the other tests then read the defaults.
  const config = settings.parsed._tag === 'Run' ? settings.parsed.config : defaultAppConfig;
  const { httpPort } = config;
  const volumeOf = (container: IContainer, mountPath: string) => {
    const mount = container.volumeMounts?.find((candidate) => candidate.mountPath === mountPath);
    return { mount, volume: pod.volumes?.find((volume) => volume.name === mount?.name) };
  };

  it('is valid against the Kubernetes schema of each kind', () => {
    expect(objects.flatMap((object: KubeObject) => schemaProblems(object))).toEqual([]);
  });

  it('runs modelsync with real flags and MODELSYNC_* env vars only, from the image entrypoint', () => {
    expect(settings.parsed).toMatchObject({ _tag: 'Run' });
    expect(settings.unknownEnv).toEqual([]);
    expect(modelsync.command).toBeUndefined();
    expect(Number.isInteger(httpPort) && httpPort > 0 && httpPort < 65536).toBe(true);
    // --shutdown-timeout is in the flag table now: the parsed value, in ms, must end before the grace period.
    const shutdownTimeoutMs =
      settings.parsed._tag === 'Run' ? settings.parsed.config.shutdownTimeout : Infinity;
    expect(shutdownTimeoutMs).toBe(20_000);
    expect(shutdownTimeoutMs / 1000).toBeLessThan(pod.terminationGracePeriodSeconds ?? 30);
  });

  it('probes modelsync on its HTTP port: started and alive on /healthz, ready on /readyz', () => {
    const { startupProbe, livenessProbe, readinessProbe } = modelsync;
    expect([startupProbe, livenessProbe, readinessProbe].map((probe) => probe?.httpGet?.path)).toEqual([
      surface.healthz,
      surface.healthz,
      surface.readyz,
    ]);
    for (const probe of [startupProbe, livenessProbe, readinessProbe])
      expect(probePort(modelsync, probe?.httpGet?.port)).toBe(httpPort);
  });

  it('runs modelsync as a native sidecar only with restartPolicy Always, and the model server after it', () => {
    expect(modelsync.restartPolicy).toBe(init ? 'Always' : undefined);
    // The kubelet starts the model server only once this startupProbe passes: it must not wait for the server.
    if (init) expect(modelsync.startupProbe?.httpGet?.path).toBe(surface.healthz);
    if (init) expect(pod.initContainers?.[0]?.name).toBe('modelsync');
  });

  it('locks modelsync down: non-root numeric user, read-only root, no privilege escalation, no caps, seccomp', () => {
    const security = modelsync.securityContext;
    expect(security).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect(security?.runAsUser).toBeGreaterThan(0);
    expect(security?.capabilities?.drop).toContain('ALL');
    expect(pod.securityContext?.seccompProfile?.type ?? security?.seccompProfile?.type).toBe(
      'RuntimeDefault',
    );
    expect(pod.automountServiceAccountToken).toBe(false);
  });

  it('reads the models ConfigMap: mounted whole at --config-dir, read-only, or through the API server (kube-api); no subPath', () => {
    const { mount, volume } = volumeOf(modelsync, config.configDir);
    if (config.source === 'dir') expect(mount?.readOnly).toBe(true);
    else expect(mount).toBeUndefined();
    const name = config.source === 'dir' ? volume?.configMap?.name : config.configmap;
    const configMap = objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name === name);
    expect(configMap).toBeDefined();
    const modelsJson = (configMap!['data'] as Record<string, string>)['models.json'];
    expect(E.isRight(decodeConfig('models.json', modelsJson ?? ''))).toBe(true);
    expect(
      allContainers(pod)
        .flatMap((container) => container.volumeMounts ?? [])
        .filter((m) => m.subPath !== undefined),
    ).toEqual([]);
  });

  it("gives modelsync alone a token, for its one ConfigMap (--source kube-api) and its Pod's Events (kube-events)", () => {
    const kinds = objects.map((object) => object.kind);
    const tokenMounts = allContainers(pod).filter((container) =>
      (container.volumeMounts ?? []).some(
        (m) => m.mountPath === '/var/run/secrets/kubernetes.io/serviceaccount',
      ),
    );
    if (config.source === 'dir' && !events) {
      expect(kinds).not.toEqual(expect.arrayContaining(['Role']));
      expect(pod.serviceAccountName).toBeUndefined();
      expect(tokenMounts).toEqual([]);
      return;
    }
    const account = objects.find(
      (o) => o.kind === 'ServiceAccount' && o.metadata.name === pod.serviceAccountName,
    );
    expect(account?.['automountServiceAccountToken']).toBe(false);
    const bindings = objects.filter((o) => o.kind === 'RoleBinding');
    for (const binding of bindings)
      expect(binding['subjects']).toEqual([
        { kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: account?.metadata.namespace },
      ]);
    const bound = new Set(bindings.map((binding) => (binding['roleRef'] as { name: string }).name));
    const rules = objects
      .filter((o) => o.kind === 'Role' && bound.has(o.metadata.name))
      .flatMap((role) => role['rules'] as unknown[]);
    expect(rules).toEqual([
      ...(config.source === 'kube-api'
        ? [
            {
              apiGroups: [''],
              resources: ['configmaps'],
              resourceNames: [config.configmap],
              verbs: ['get', 'list', 'watch'],
            },
          ]
        : []),
      ...(events ? [{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }] : []),
    ]);
    expect(tokenMounts.map((container) => container.name)).toEqual(['modelsync']);
    if (!events) return;
    const fromDownwardApi = (name: string) =>
      modelsync.env?.find((entry) => entry.name === name)?.valueFrom?.fieldRef?.fieldPath;
    expect([
      fromDownwardApi('POD_NAME'),
      fromDownwardApi('POD_NAMESPACE'),
      fromDownwardApi('POD_UID'),
    ]).toEqual(['metadata.name', 'metadata.namespace', 'metadata.uid']);
  });

  it('shares an emptyDir at --model-dir with the model server, whose model repository it is', () => {
    const ours = volumeOf(modelsync, config.modelDir);
    expect(ours.volume?.emptyDir).toBeDefined();
    expect(ours.mount?.readOnly).not.toBe(true);
    const serverMount = server.volumeMounts?.find((mount) => mount.name === ours.volume?.name);
    expect(serverMount?.mountPath).toBe(config.modelDir);
    // Its model repository is that dir: Triton's --model-repository, MLServer's env, TorchServe's --model-store.
    const serverSettings = [...(server.args ?? []), ...(server.env ?? []).map((entry) => entry.value ?? '')];
    expect(
      serverSettings.some(
        (setting) => setting.endsWith(`=${config.modelDir}`) || setting === config.modelDir,
      ),
    ).toBe(true);
  });

  it('links models of one content (--link-same-content) only where no other container can write the model dir', () => {
    const { volume } = volumeOf(modelsync, config.modelDir);
    const writers = [...(pod.initContainers ?? []), ...pod.containers]
      .filter((container) => container.name !== modelsync.name)
      .filter((container) =>
        container.volumeMounts?.some((mount) => mount.name === volume?.name && mount.readOnly !== true),
      );
    expect({ link: config.linkSameContent, writers: writers.map((container) => container.name) }).toEqual({
      link: true,
      writers: [],
    });
  });

  it('mounts a models claim, if any, at the same path in modelsync and the model server, read-only, where --pvc-mount-root looks', () => {
    const claims = (pod.volumes ?? []).filter((volume) => volume.persistentVolumeClaim !== undefined);
    for (const claim of claims) {
      const mountsOf = (container: IContainer) =>
        (container.volumeMounts ?? []).filter((mount) => mount.name === claim.name);
      // Linked files (--local-model-files link) resolve in the model server's container only at the same path.
      expect(mountsOf(modelsync)).toEqual([
        { name: claim.name, mountPath: config.pvcMountRoot, readOnly: true },
      ]);
      expect(mountsOf(server)).toEqual([
        { name: claim.name, mountPath: config.pvcMountRoot, readOnly: true },
      ]);
      expect(config.localModelFiles).toBe('link');
    }
    expect(claims.length).toBe(variantName.includes('model-claim') ? 1 : 0);
  });

  it('mounts a node cache, if any, at --node-cache-dir into modelsync alone, owned by its user', () => {
    const caches = (pod.volumes ?? []).filter((volume) => volume.hostPath !== undefined);
    expect(caches.length).toBe(variantName.includes('node-cache') ? 1 : 0);
    for (const cache of caches) {
      const mounting = allContainers(pod).filter((container) =>
        container.volumeMounts?.some((mount) => mount.name === cache.name),
      );
      const owner = mounting.find((container) => container !== modelsync);
      // modelsync and the init container that gives it the dir: never the model server.
      expect(mounting.map((container) => container.name).sort()).toEqual(['modelsync', 'node-cache-owner']);
      expect(modelsync.volumeMounts?.find((mount) => mount.name === cache.name)?.mountPath).toBe(
        config.nodeCacheDir,
      );
      expect(owner?.command?.join(' ')).toContain(
        `chownSync('${config.nodeCacheDir}', ${modelsync.securityContext?.runAsUser}, ${modelsync.securityContext?.runAsGroup})`,
      );
      expect(owner?.securityContext?.capabilities).toEqual({ drop: ['ALL'], add: ['CHOWN'] });
    }
  });

  it('reaches the model server inside the pod at --server-url', () => {
    const url = new URL(config.serverUrl);
    expect(url.hostname).toBe('127.0.0.1');
    const serverPorts = (server.ports ?? []).map((port) => port.containerPort);
    const torchserveConfig = objects.find((object) => object.metadata.name === 'torchserve-config');
    const managementAddress = /management_address=(\S+)/.exec(
      String((torchserveConfig?.['data'] as Record<string, string> | undefined)?.['config.properties']),
    )?.[1];
    if (config.protocol === 'torchserve') expect(managementAddress).toBe(url.origin);
    else expect(serverPorts).toContain(Number(url.port));
  });

  it('gives every container requests and a memory limit, and every image a pinned tag', () => {
    for (const container of allContainers(pod)) {
      expect(Object.keys(container.resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(container.resources?.limits?.memory).toBeDefined();
      expect(container.image).toMatch(/:[\w.-]+$/);
      expect(container.image).not.toMatch(/:latest$/);
    }
    expect(modelsync.image).toMatch(new RegExp(`:${packageVersion.replaceAll('.', '\\.')}$`));
  });

  it('is scraped once, on modelsync’s port and /metrics: by pod annotations or by a ServiceMonitor', () => {
    const annotations = deploymentOf(objects).spec!.template.metadata?.annotations ?? {};
    const monitor = objects.find((object) => object.kind === 'ServiceMonitor');
    if (monitor === undefined) {
      expect(annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/path': surface.metrics,
      });
      expect(Number(annotations['prometheus.io/port'])).toBe(httpPort);
      return;
    }
    expect(Object.keys(annotations).filter((key) => key.startsWith('prometheus.io/'))).toEqual([]);
    const service = objects.find((object) => object.kind === 'Service')!;
    const spec = service['spec'] as {
      ports: Array<{ name: string; targetPort: string }>;
      selector: Record<string, string>;
    };
    const [endpoint] = (monitor['spec'] as { endpoints: Array<{ port: string; path: string }> }).endpoints;
    const servicePort = spec.ports.find((port) => port.name === endpoint?.port);
    expect(endpoint?.path).toBe(surface.metrics);
    expect(probePort(modelsync, servicePort?.targetPort)).toBe(httpPort);
    expect(deploymentOf(objects).spec!.template.metadata?.labels).toMatchObject(spec.selector);
  });
});
