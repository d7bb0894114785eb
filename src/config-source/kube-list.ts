/** ConfigMapLister: the field-selected list of one ConfigMap, read bounded and checked before ListWatch believes it. */
import type { KubeConfig, V1ConfigMap, V1ConfigMapList } from '@kubernetes/client-node';
import { configMapSelector, configMapsPath } from '../core/config-map';
import { jsonObject } from '../core/json/json-object';
import { parseAnswerJson } from '../core/json/json';
import type { KubeClientModule } from './kube-client';
import { answerWithin, readCapped } from '../net';
import {
  KubeAnswerTooLarge,
  kubeCall,
  KubeRelistNeeded,
  kubeVersionOf,
  maxKubeAnswerBytes,
} from './kube-request';

const brokenList = (why: string): Error => new KubeRelistNeeded(`the API server's list was ${why}`);

/**
 * The most one list may take, its answer read whole: a ConfigMap list is answered in milliseconds. One that drips its
 * head or body (or sends 1xx answers without end) was caught only by the stall timer, 330 s of silence at start.
 */
const listWithinMs = 60_000;

/** Why `item` is not the ConfigMap `name` as a field-selected list holds it, or undefined. */
const itemProblem = (
  item: unknown,
  { name, namespace }: { readonly name: string; readonly namespace: string },
): string | undefined => {
  const metadata = jsonObject(jsonObject(item)?.['metadata']);
  if (metadata === undefined) return 'an item without metadata';
  if (metadata['name'] !== name)
    return `the ConfigMap ${JSON.stringify(metadata['name'])?.slice(0, 80) ?? 'without a name'}, not ${name}`;
  if (metadata['namespace'] !== namespace)
    return `a ConfigMap in the namespace ${JSON.stringify(metadata['namespace'])?.slice(0, 80) ?? 'none'}, not ${namespace}`;
  const version = metadata['resourceVersion'];
  if (version !== undefined && kubeVersionOf(version) === undefined)
    return 'an item with a resourceVersion no API server writes';
  return undefined;
};

/** What a list answers with the metadata of the objects alone (the API server's `PartialObjectMetadataList`). */
const metadataOnly = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

/**
 * Lists one ConfigMap for ListWatch, and tells which version it could not read (`refused`, at most once per
 * version). Past the cap, a list of the metadata alone names the version and its snapshot, and the full list pinned
 * to that snapshot says whether that very version is too big; while it stays, each list is that one small request
 * (docs/operating.md, Config sources).
 */
export class ConfigMapLister {
  /** The version found too big to read ('' when the server did not name it); undefined after a readable list. */
  private refusedVersion: string | undefined;

  constructor(
    private readonly kube: KubeClientModule,
    private readonly where: { readonly namespace: string; readonly name: string },
    private readonly refused: (version: string | undefined) => void,
    private readonly withinMs = listWithinMs,
  ) {}

  /** The list (see `listConfigMap`), or a `KubeAnswerTooLarge` once `refused` has been told. */
  async list(config: KubeConfig, signal: AbortSignal): Promise<V1ConfigMapList> {
    if (this.refusedVersion === undefined) {
      try {
        return await this.listConfigMap(config, signal);
      } catch (cause) {
        if (!(cause instanceof KubeAnswerTooLarge)) throw cause;
      }
    }
    const versions = await this.metadataVersions(config, signal);
    if (versions?.item !== undefined && versions.item === this.refusedVersion)
      throw new KubeAnswerTooLarge(`the ConfigMap is still at version ${versions.item}, too big to read`);
    try {
      const list = await this.listConfigMap(config, signal, versions?.list);
      this.refusedVersion = undefined;
      return list;
    } catch (cause) {
      if (cause instanceof KubeAnswerTooLarge) {
        this.refusedVersion = versions?.item ?? '';
        this.refused(versions?.item);
      }
      throw cause;
    }
  }

  /** The field-selected list's 200 answer, read to `maxKubeAnswerBytes` at most (`tooLarge()` past it), as JSON. */
  private async get(
    config: KubeConfig,
    signal: AbortSignal,
    tooLarge: () => Error,
    query: Readonly<Record<string, string | undefined>> = {},
    accept?: string,
  ): Promise<Readonly<Record<string, unknown>> | undefined> {
    const { kube, where } = this;
    const selected = { fieldSelector: configMapSelector(where.name), ...query };
    const path = configMapsPath(where.namespace);
    // The whole answer, read and parsed, within the deadline: `answerWithin`'s send is all of it.
    return answerWithin(
      this.withinMs,
      signal,
      async (bounded) => {
        const response = await kubeCall(kube, config, path, selected, bounded, accept);
        if (response.body === null) throw brokenList('a 200 without a body');
        const bytes = await readCapped(response.body, maxKubeAnswerBytes, tooLarge);
        return jsonObject(parseAnswerJson(bytes.toString('utf8'), brokenList));
      },
      (ms) => new Error(`the API server's list was not answered whole within ${ms} ms`),
    );
  }

  /**
   * The list as ListWatch takes it: its resourceVersion and the item, if the ConfigMap exists; `at`, when given,
   * pins it to that snapshot (`resourceVersionMatch=Exact`). Past `maxKubeAnswerBytes` a `KubeAnswerTooLarge` (the
   * client's own list would read any length); an answer that is no list, has no resourceVersion or holds another
   * object throws a `KubeRelistNeeded` naming what was wrong. The item's content is read as models.json is
   * (configMapText), not here.
   */
  private async listConfigMap(
    config: KubeConfig,
    signal: AbortSignal,
    at?: string,
  ): Promise<V1ConfigMapList> {
    const tooLarge = () =>
      new KubeAnswerTooLarge(`the API server's list is over ${maxKubeAnswerBytes} bytes`);
    const pinned = at === undefined ? {} : { resourceVersion: at, resourceVersionMatch: 'Exact' };
    const list = await this.get(config, signal, tooLarge, pinned);
    if (list === undefined) throw brokenList('no object');
    const items: unknown = list['items'] ?? [];
    if (!Array.isArray(items)) throw brokenList('without an array of items');
    const listed: unknown = jsonObject(list['metadata'])?.['resourceVersion'];
    if (typeof listed !== 'string' || listed === '') throw brokenList('without a resourceVersion');
    const resourceVersion = kubeVersionOf(listed);
    if (resourceVersion === undefined) throw brokenList('with a resourceVersion no API server writes');
    // A list selected by the name holds the ConfigMap once or not at all.
    if (items.length > 1) throw brokenList(`holding ${items.length} items`);
    const problem = items.map((item) => itemProblem(item, this.where)).find((p) => p !== undefined);
    if (problem !== undefined) throw brokenList(`holding ${problem}`);
    return { metadata: { resourceVersion }, items: items as V1ConfigMap[] };
  }

  /**
   * The versions of the list (`list`) and of the ConfigMap in it (`item`, absent when it does not exist) from a
   * list of the metadata alone, without the data; undefined when the server does not tell (no metadata-only
   * lists, or a hostile answer): never throws.
   */
  private async metadataVersions(
    config: KubeConfig,
    signal: AbortSignal,
  ): Promise<{ readonly list: string; readonly item?: string } | undefined> {
    try {
      const answer = await this.get(config, signal, () => brokenList('too large'), {}, metadataOnly);
      const list = kubeVersionOf(jsonObject(answer?.['metadata'])?.['resourceVersion']);
      const items: unknown = answer?.['items'];
      if (list === undefined || !Array.isArray(items) || items.length > 1) return undefined;
      if (items.length === 0) return { list };
      const item = kubeVersionOf(jsonObject(jsonObject(items[0])?.['metadata'])?.['resourceVersion']);
      return itemProblem(items[0], this.where) === undefined && item !== undefined
        ? { list, item }
        : undefined;
    } catch {
      return undefined;
    }
  }
}
