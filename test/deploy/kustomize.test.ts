/**
 * The kustomize rules deploy/ and docs/operating.md rely on, held against the pinned real kustomize: a new pin
 * that changed one fails here, by name, before it changes a manifest.
 */
import { join } from 'node:path';
import { stringify } from 'yaml';
import { writeFiles } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';
import { renderKustomization, type Json, type JsonObject, type KubeObject } from './kustomize';

const deployment = (spec: JsonObject): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'serving' },
  spec: { template: { spec } },
});

const podSpecOf = (object: JsonObject): JsonObject =>
  ((object['spec'] as JsonObject)['template'] as JsonObject)['spec'] as JsonObject;

const names = (list: unknown): unknown[] => (list as Array<{ name: string }>).map((item) => item.name);

const example = (spec: JsonObject): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Example',
  metadata: { name: 'doc' },
  spec,
});

describe('renderKustomization', () => {
  const temp = useTempDir('kustomize');
  /** Writes `files` under the temp dir, each value as YAML. */
  const write = (files: Record<string, Json>): Promise<void> =>
    writeFiles(
      temp.path,
      Object.fromEntries(Object.entries(files).map(([path, value]) => [path, stringify(value)])),
    );
  /** Writes `files` and renders the kustomization of `dir`. */
  const render = async (files: Record<string, Json>, dir = 'top'): Promise<KubeObject[]> => {
    await write(files);
    return renderKustomization(join(temp.path, dir));
  };
  /** One object, patched by `patch` (a strategic merge patch, or a JSON patch of `target`). */
  const patched = async (object: KubeObject, patch: Json, target?: JsonObject): Promise<KubeObject> => {
    const [result] = await render({
      'top/kustomization.yaml': {
        resources: ['object.yaml'],
        patches: [{ path: 'patch.yaml', ...(target === undefined ? {} : { target }) }],
      },
      'top/object.yaml': object,
      'top/patch.yaml': patch,
    });
    return result!;
  };

  describe('by strategic merge', () => {
    const original = deployment({
      containers: [{ name: 'a', args: ['--x'], env: [{ name: 'E', value: '1' }] }, { name: 'b' }],
      volumes: [{ name: 'v1' }, { name: 'v2' }],
      tolerations: [{ key: 'k1' }, { key: 'k2' }],
    });

    it("merges list items by their key: the patch's items first, in its order, then the original rest", async () => {
      const spec = podSpecOf(
        await patched(
          original,
          deployment({ containers: [{ name: 'b' }, { name: 'c' }], volumes: [{ name: 'v0' }] }),
        ),
      );
      expect(names(spec['containers'])).toEqual(['b', 'c', 'a']);
      expect(names(spec['volumes'])).toEqual(['v0', 'v1', 'v2']);
    });

    it('merges inside an item, replaces args whole, deletes a key set to null and an item marked $patch: delete', async () => {
      const spec = podSpecOf(
        await patched(
          original,
          deployment({
            containers: [
              { name: 'a', args: ['--y'], env: [{ name: 'F', value: '2' }] },
              { name: 'b', $patch: 'delete' },
            ],
            volumes: null,
          }),
        ),
      );
      expect(spec['containers']).toEqual([
        {
          name: 'a',
          args: ['--y'],
          env: [
            { name: 'F', value: '2' },
            { name: 'E', value: '1' },
          ],
        },
      ]);
      expect(spec['volumes']).toBeUndefined();
    });

    it('replaces a list with no merge key whole, and every list of a custom resource', async () => {
      const spec = podSpecOf(await patched(original, deployment({ tolerations: [{ key: 'k3' }] })));
      expect(spec['tolerations']).toEqual([{ key: 'k3' }]);
      const monitor = {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: 'm' },
      };
      const result = await patched(
        { ...monitor, spec: { endpoints: [{ port: 'a' }, { port: 'b' }] } },
        { ...monitor, spec: { endpoints: [{ port: 'c' }] } },
      );
      expect(result['spec']).toEqual({ endpoints: [{ port: 'c' }] });
    });
  });

  describe('by JSON patch', () => {
    const doc = example({ list: ['a', 'b'], map: { key: 'value' } });
    const target = { kind: 'Example' };

    it('adds, inserts, appends, moves, copies and replaces as RFC 6902 says', async () => {
      const ops: Json[] = [
        { op: 'add', path: '/spec/list/1', value: 'x' },
        { op: 'add', path: '/spec/list/-', value: 'z' },
        { op: 'move', from: '/spec/map/key', path: '/spec/moved' },
        { op: 'copy', from: '/spec/list/0', path: '/spec/map/a~1b' },
        { op: 'replace', path: '/spec/list/0', value: 'A' },
      ];
      expect((await patched(doc, ops, target))['spec']).toEqual({
        list: ['A', 'x', 'b', 'z'],
        map: { 'a/b': 'a' },
        moved: 'value',
      });
    });

    it.each([
      [
        'a failed test',
        [{ op: 'test', path: '/spec/list/0', value: 'b' }],
        'testing value /spec/list/0 failed',
      ],
      [
        'a missing path',
        [
          { op: 'remove', path: '/spec/list/0' },
          { op: 'remove', path: '/spec/nope' },
        ],
        "error in remove for path: '/spec/nope'",
      ],
      ['an index past the end', [{ op: 'add', path: '/spec/list/5', value: 1 }], 'invalid index referenced'],
    ])('fails the whole build on %s, naming the operation', async (_what, ops, message) => {
      await expect(patched(doc, ops, target)).rejects.toThrow(message);
    });
  });

  describe('a kustomization', () => {
    const base = {
      'base/kustomization.yaml': {
        resources: ['app.yaml'],
        images: [{ name: 'app', newName: 'reg/app', newTag: '2' }],
      },
      'base/app.yaml': deployment({ containers: [{ name: 'a', image: 'app:1' }] }),
    };

    it('applies components after the resources and before its own patches, then namespace and images', async () => {
      const [object] = await render({
        ...base,
        'top/kustomization.yaml': {
          namespace: 'ns',
          resources: ['../base'],
          components: ['../component'],
          patches: [{ path: 'patch.yaml', target: { kind: 'Deployment' } }],
          images: [{ name: 'sidecar', newTag: '3' }],
        },
        'top/patch.yaml': [{ op: 'test', path: '/spec/template/spec/containers/0/name', value: 'c' }],
        'component/kustomization.yaml': {
          apiVersion: 'kustomize.config.k8s.io/v1alpha1',
          kind: 'Component',
          patches: [{ path: 'add.yaml' }],
        },
        'component/add.yaml': deployment({ containers: [{ name: 'c', image: 'sidecar:1' }] }),
      });
      expect(object?.metadata).toEqual({ name: 'serving', namespace: 'ns' });
      expect(podSpecOf(object!)['containers']).toEqual([
        { name: 'c', image: 'sidecar:3' },
        { name: 'a', image: 'reg/app:2' },
      ]);
    });

    it.each([
      [
        'a patch that matches nothing',
        { resources: ['../base'], patches: [{ path: 'p.yaml' }] },
        'no resource matches strategic merge patch',
      ],
      [
        'an object defined twice',
        { resources: ['../base', 'app.yaml'] },
        'may not add resource with an already registered id: Deployment.v1.apps/serving',
      ],
      [
        'a kustomization listed as a component',
        { resources: ['../base'], components: ['../base'] },
        "expected kind 'Component'",
      ],
    ])('is refused for %s', async (_what, kustomization, message) => {
      await write({
        ...base,
        'top/kustomization.yaml': kustomization,
        'top/p.yaml': { ...deployment({}), metadata: { name: 'other' } },
        'top/app.yaml': base['base/app.yaml'],
      });
      expect(() => renderKustomization(join(temp.path, 'top'))).toThrow(message);
    });
  });
});
