/**
 * The test-only kustomize: the rules it shares with real kustomize (checked against kubectl kustomize v5.5.0
 * by `npm run check:kustomize`), and the errors it raises rather than render something kustomize would not.
 */
import { join } from 'node:path';
import { stringify } from 'yaml';
import { writeFiles } from '../helpers/file-tree';
import { useTempDir } from '../helpers/temp-dir';
import { applyJsonPatch, type JsonObject } from './json-patch';
import { renderKustomization } from './kustomize';
import { strategicMerge } from './strategic-merge';

const deployment = (spec: JsonObject): JsonObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'serving' },
  spec: { template: { spec } },
});

const podSpecOf = (object: JsonObject): JsonObject =>
  ((object['spec'] as JsonObject)['template'] as JsonObject)['spec'] as JsonObject;

const names = (list: unknown): unknown[] => (list as Array<{ name: string }>).map((item) => item.name);

describe('strategicMerge', () => {
  const original = deployment({
    containers: [{ name: 'a', args: ['--x'], env: [{ name: 'E', value: '1' }] }, { name: 'b' }],
    volumes: [{ name: 'v1' }, { name: 'v2' }],
  });

  it('merges list items by their key: patched ones in patch order, a new one before the original rest', () => {
    const patched = podSpecOf(
      strategicMerge(
        original,
        deployment({ containers: [{ name: 'b' }, { name: 'c' }], volumes: [{ name: 'v0' }] }),
      ),
    );
    expect(names(patched['containers'])).toEqual(['a', 'b', 'c']);
    expect(names(patched['volumes'])).toEqual(['v0', 'v1', 'v2']);
  });

  it('merges inside an item, replaces args whole, deletes a key set to null and an item marked $patch: delete', () => {
    const patched = podSpecOf(
      strategicMerge(
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
    expect(patched['containers']).toEqual([
      {
        name: 'a',
        args: ['--y'],
        env: [
          { name: 'F', value: '2' },
          { name: 'E', value: '1' },
        ],
      },
    ]);
    expect(patched['volumes']).toBeUndefined();
  });

  it('refuses a list whose merge rule it does not know, and a directive it does not support', () => {
    expect(() => strategicMerge(original, deployment({ tolerations: [{ key: 'k' }] }))).toThrow(
      'spec.template.spec.tolerations: no strategic merge rule for this list here',
    );
    expect(() => strategicMerge(original, deployment({ $retainKeys: ['containers'] }))).toThrow(
      'unsupported directive',
    );
  });

  it('replaces the lists of a custom resource whole', () => {
    const monitor = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name: 'm' },
    };
    const patched = strategicMerge(
      { ...monitor, spec: { endpoints: [{ port: 'a' }, { port: 'b' }] } },
      { ...monitor, spec: { endpoints: [{ port: 'c' }] } },
    );
    expect(patched['spec']).toEqual({ endpoints: [{ port: 'c' }] });
  });
});

describe('applyJsonPatch', () => {
  const doc = { list: ['a', 'b'], map: { key: 'value' } };

  it('adds, inserts, appends, moves, copies and replaces as RFC 6902 says', () => {
    const ops = [
      { op: 'add', path: '/list/1', value: 'x' },
      { op: 'add', path: '/list/-', value: 'z' },
      { op: 'move', from: '/map/key', path: '/moved' },
      { op: 'copy', from: '/list/0', path: '/map/a~1b' },
      { op: 'replace', path: '/list/0', value: 'A' },
    ];
    expect(applyJsonPatch(doc, ops)).toEqual({
      list: ['A', 'x', 'b', 'z'],
      map: { 'a/b': 'a' },
      moved: 'value',
    });
    expect(doc).toEqual({ list: ['a', 'b'], map: { key: 'value' } });
  });

  it('fails the whole patch on a failed test or a missing path, naming the operation', () => {
    expect(() => applyJsonPatch(doc, [{ op: 'test', path: '/list/0', value: 'b' }])).toThrow(
      'JSON patch operation 0: test failed: /list/0 is "a", not "b"',
    );
    expect(() =>
      applyJsonPatch(doc, [
        { op: 'remove', path: '/list/0' },
        { op: 'remove', path: '/nope' },
      ]),
    ).toThrow('JSON patch operation 1: /nope does not exist');
    expect(() => applyJsonPatch(doc, [{ op: 'add', path: '/list/5', value: 1 }])).toThrow('no array index 5');
  });
});

describe('renderKustomization', () => {
  const temp = useTempDir('kustomize');
  const write = (files: Record<string, unknown>): Promise<void> =>
    writeFiles(
      temp.path,
      Object.fromEntries(Object.entries(files).map(([path, value]) => [path, stringify(value)])),
    );
  const base = {
    'base/kustomization.yaml': {
      resources: ['app.yaml'],
      images: [{ name: 'app', newName: 'reg/app', newTag: '2' }],
    },
    'base/app.yaml': deployment({ containers: [{ name: 'a', image: 'app:1' }] }),
  };

  it('applies components after the resources and before its own patches, then namespace and images', async () => {
    await write({
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
    const [object] = renderKustomization(join(temp.path, 'top'));
    expect(object?.metadata).toEqual({ name: 'serving', namespace: 'ns' });
    expect(podSpecOf(object!)['containers']).toEqual([
      { name: 'c', image: 'sidecar:3' },
      { name: 'a', image: 'reg/app:2' },
    ]);
  });

  it.each([
    [
      'a field it does not support',
      { resources: ['../base'], commonLabels: { a: 'b' } },
      'unsupported commonLabels',
    ],
    [
      'a patch that matches nothing',
      { resources: ['../base'], patches: [{ path: 'p.yaml' }] },
      'no object matches',
    ],
    [
      'an object defined twice',
      { resources: ['../base', '../base/app.yaml'] },
      'Deployment//serving is defined twice',
    ],
    [
      'a component listed as a resource',
      { resources: ['../base'], components: ['../base'] },
      'expected a Component',
    ],
  ])('refuses %s', async (_what, kustomization, message) => {
    await write({
      ...base,
      'top/kustomization.yaml': kustomization,
      'top/p.yaml': { ...deployment({}), metadata: { name: 'other' } },
    });
    expect(() => renderKustomization(join(temp.path, 'top'))).toThrow(message);
  });
});
