/**
 * deploy/kserve-dropin: the component over KServe's own objects (the example's vendored copies) sets modelsync's
 * image in the `agent` and `storageInitializer` keys of `inferenceservice-config` and in the ClusterStorageContainer
 * `default`, and changes nothing else; each patched key still holds every field KServe's webhook reads, valid.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseQuantity } from '../../src/core/quantity';
import {
  isJsonObject,
  objectId,
  parseYamlDocuments,
  renderKustomization,
  type Json,
  type JsonObject,
  type KubeObject,
} from './kustomize';
import { schemaProblems } from './kubernetes-schemas';
import { containerNamed, deploymentOf, podSpecOf } from './pod';
import { deployDir, podlessKustomizations } from './variants';

const exampleDir = podlessKustomizations.find(({ name }) => name === 'kserve-dropin/example')!.dir;

const vendoredObject = (file: string): KubeObject => {
  const path = join(exampleDir, file);
  const [object] = parseYamlDocuments(readFileSync(path, 'utf8'), path);
  return object as KubeObject;
};

const dataOf = (object: KubeObject | undefined): Record<string, string> =>
  (object?.['data'] ?? {}) as Record<string, string>;

/** What KServe's Go structs read from each patched key (their json tags), and how each is checked. */
type FieldKind = 'image' | 'quantity' | 'string' | 'boolean' | 'integer';
const kserveFields: Readonly<Record<'agent' | 'storageInitializer', Readonly<Record<string, FieldKind>>>> = {
  // AgentConfig: every resource value goes through resource.MustParse, which panics on an empty one.
  agent: {
    image: 'image',
    cpuRequest: 'quantity',
    cpuLimit: 'quantity',
    memoryRequest: 'quantity',
    memoryLimit: 'quantity',
  },
  // StorageInitializerConfig of KServe v0.19.0 (pkg/types/config.go).
  storageInitializer: {
    image: 'image',
    memoryRequest: 'quantity',
    memoryLimit: 'quantity',
    cpuRequest: 'quantity',
    cpuLimit: 'quantity',
    caBundleConfigMapName: 'string',
    caBundleVolumeMountPath: 'string',
    enableModelcar: 'boolean',
    cpuModelcar: 'quantity',
    memoryModelcar: 'quantity',
    uidModelcar: 'integer',
  },
};

const fits = (kind: FieldKind, value: Json | undefined): boolean => {
  if (kind === 'boolean') return typeof value === 'boolean';
  if (kind === 'integer') return Number.isSafeInteger(value);
  if (typeof value !== 'string') return false;
  if (kind === 'quantity') return parseQuantity(value) !== undefined;
  return kind === 'string' || value !== '';
};

/** The name deploy/base gives modelsync's image, before its `images:` entry retags it. */
const baseImage = (): string | undefined => {
  const path = join(deployDir, 'base', 'deployment.yaml');
  const objects = parseYamlDocuments(readFileSync(path, 'utf8'), path) as KubeObject[];
  return containerNamed(podSpecOf(deploymentOf(objects)), 'modelsync').container.image;
};

const rendered = renderKustomization(exampleDir);
const renderedNamed = (id: string): KubeObject | undefined =>
  rendered.find((object) => objectId(object) === id);
const configId = 'ConfigMap/kserve/inferenceservice-config';
const storageContainerId = 'ClusterStorageContainer//default';
const vendoredConfig = vendoredObject('inferenceservice-config.yaml');
const vendoredStorageContainer = vendoredObject('cluster-storage-container.yaml');

describe('deploy/kserve-dropin', () => {
  it('renders over the vendored inferenceservice-config and ClusterStorageContainer, adding no object', () => {
    expect(rendered.map(objectId)).toEqual([configId, storageContainerId]);
    expect(schemaProblems(renderedNamed(configId)!)).toEqual([]);
    expect(Object.keys(dataOf(vendoredConfig)).sort()).toEqual(
      ['agent', 'batcher', 'credentials', 'localModel', 'logger', 'storageInitializer'].sort(),
    );
  });

  it('changes the agent and storageInitializer keys only, leaving every other key byte for byte', () => {
    const before = dataOf(vendoredConfig);
    const after = dataOf(renderedNamed(configId));
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    const changed = Object.keys(before).filter((key) => after[key] !== before[key]);
    expect(changed.sort()).toEqual(['agent', 'storageInitializer']);
    const { data: _afterData, ...afterRest } = renderedNamed(configId)!;
    const { data: _beforeData, ...beforeRest } = vendoredConfig;
    expect(afterRest).toEqual(beforeRest);
  });

  it.each(Object.entries(kserveFields))(
    "keeps %s JSON with every field KServe reads, valid, at KServe's values but the image",
    (key, fields) => {
      const patched = JSON.parse(dataOf(renderedNamed(configId))[key]!) as JsonObject;
      const shipped = JSON.parse(dataOf(vendoredConfig)[key]!) as JsonObject;
      expect(Object.keys(patched).sort()).toEqual(Object.keys(fields).sort());
      const misfits = Object.entries(fields).filter(([field, kind]) => !fits(kind, patched[field]));
      expect(misfits).toEqual([]);
      expect(patched).toEqual({ ...shipped, image: 'modelsync' });
    },
  );

  it('sets the image of the ClusterStorageContainer default and nothing else of it', () => {
    const expected = structuredClone(vendoredStorageContainer);
    const spec = expected['spec'];
    if (!isJsonObject(spec) || !isJsonObject(spec['container'])) throw new Error('no spec.container');
    spec['container']['image'] = 'modelsync';
    expect(renderedNamed(storageContainerId)).toEqual(expected);
  });

  it("names modelsync's image as deploy/base does", () => {
    expect(baseImage()).toBe('modelsync');
  });
});
