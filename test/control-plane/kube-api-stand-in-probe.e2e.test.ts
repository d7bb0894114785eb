/**
 * The API-server stand-in (src/testing/kube-api-stand-in.ts) checked against a real API server: the same requests
 * `--source kube-api` sends, to both, with the same ServiceAccount token and the RBAC of deploy/ on the real one,
 * and the answers compared in what modelsync reads of them (status, kind, the Status's reason and the user it
 * names, the items, the events of a watch). The stand-in stays for the faults only it can play on cue (a watch
 * line over the cap, a half-open connection, a redirect, an outage, a compaction); this keeps what it answers in
 * the ordinary cases true.
 */
import { request } from 'node:https';
import { join } from 'node:path';
import { namesAnonymousUser, refusedUser } from '../../src/core/config-map';
import { startKubeApiStandIn, type KubeApiStandIn } from '../../src/testing/kube-api-stand-in';
import { renderKustomization } from '../deploy/kustomize';
import { serverTls, tlsFixture } from '../helpers/tls';
import { repoRoot } from '../real-servers/paths';
import { inNamespace, useControlPlane } from './control-plane';

jest.setTimeout(120_000);

const overlay = renderKustomization(join(repoRoot, 'deploy', 'overlays', 'triton-kube-api'));
const rbac = overlay.filter((object) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(object.kind));
const name = overlay.find((object) => object.kind === 'ConfigMap')!.metadata.name;

const controlPlane = useControlPlane();
let standIn: KubeApiStandIn;
let namespace: string;
let token: string;

/** The ConfigMap's data, applied to both. */
const applyBoth = async (models: string): Promise<void> => {
  const data = { 'models.json': models };
  await controlPlane.plane.apply({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data,
  });
  standIn.apply(data);
};

beforeAll(async () => {
  namespace = await controlPlane.plane.namespace('probe');
  await controlPlane.plane.apply(...rbac.map((object) => inNamespace(object, namespace)));
  token = (
    await controlPlane.plane.kubectl(['create', 'token', 'modelsync', '-n', namespace, '--duration=1h'])
  ).trim();
  standIn = await startKubeApiStandIn({ tls: serverTls(), token, namespace, name });
  await applyBoth('[]');
});
afterAll(async () => {
  await standIn?.close();
});

interface Answer {
  readonly status: number;
  readonly contentType: string;
  /** The body's JSON documents: one for a list or a Status, one per line for a watch. */
  readonly documents: ReadonlyArray<Record<string, unknown>>;
}

/** A GET of `path` on `base`, read to its end (a watch: until the server ends it); `during` runs once it answered. */
const get = (
  base: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  during?: () => Promise<void>,
): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const call = request(`${base}${path}`, { headers, ca: tlsFixture('ca.pem') }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.once('end', () =>
        resolve({
          status: answer.statusCode ?? 0,
          contentType: String(answer.headers['content-type']).split(';')[0]!,
          documents: Buffer.concat(chunks)
            .toString('utf8')
            .split('\n')
            .filter((line) => line.trim() !== '')
            .map((line) => JSON.parse(line) as Record<string, unknown>),
        }),
      );
      answer.once('error', reject);
      void during?.().catch(reject);
    });
    call.once('error', reject);
    call.end();
  });

const field = (value: unknown, ...keys: string[]): unknown =>
  keys.reduce<unknown>(
    (at, key) => (typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[key] : undefined),
    value,
  );

/** What modelsync reads of one document: its kind, a Status's reason, code and user, a list's items, an event's. */
const shapeOf = (document: Record<string, unknown>): unknown => {
  if (document['kind'] === 'Status')
    return {
      kind: 'Status',
      reason: document['reason'],
      code: document['code'],
      anonymous: namesAnonymousUser(document),
      user: refusedUser(document),
    };
  if (typeof document['type'] === 'string')
    return {
      type: document['type'],
      object: shapeOf(document['object'] as Record<string, unknown>),
    };
  const items = document['items'];
  return {
    kind: document['kind'],
    apiVersion: document['apiVersion'],
    resourceVersion: /^\d+$/.test(String(field(document, 'metadata', 'resourceVersion'))),
    ...(Array.isArray(items) ? { items: items.map((item) => shapeOf(item as Record<string, unknown>)) } : {}),
    ...(document['data'] !== undefined ? { data: document['data'] } : {}),
    ...(field(document, 'metadata', 'name') !== undefined
      ? { name: field(document, 'metadata', 'name') }
      : {}),
  };
};

const shape = (answer: Answer) => ({
  status: answer.status,
  contentType: answer.contentType,
  documents: answer.documents.map(shapeOf),
});

const collection = (): string => `/api/v1/namespaces/${namespace}/configmaps`;
const selected = (): string => `${collection()}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
const bearer = (): Record<string, string> => ({ Authorization: `Bearer ${token}` });

/** The same request to both; their shapes, the real one first. */
const both = async (
  path: string,
  headers: Readonly<Record<string, string>>,
): Promise<[real: unknown, standIn: unknown]> => [
  shape(await get(controlPlane.plane.url, path, headers)),
  shape(await get(standIn.url, path, headers)),
];

describe('the API-server stand-in answers as a real API server does', () => {
  it.each([
    ['the field-selected list modelsync sends', () => selected(), bearer],
    [
      'a list of the whole collection, which the Role limited by resourceNames refuses',
      () => collection(),
      bearer,
    ],
    ['a watch of the whole collection, refused as well', () => `${collection()}?watch=true`, bearer],
    ['a list without a token (403 as system:anonymous)', () => selected(), () => ({})],
    ['a list with a wrong token (401)', () => selected(), () => ({ Authorization: 'Bearer wrong' })],
    [
      'a list of the metadata alone',
      () => selected(),
      () => ({ ...bearer(), Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' }),
    ],
  ])('%s', async (_what, path, headers) => {
    const [real, standInShape] = await both(path(), headers());
    expect(standInShape).toEqual(real);
  });

  it('a watch from resourceVersion 0: the object as ADDED, a BOOKMARK, each change as MODIFIED, ended at timeoutSeconds', async () => {
    await applyBoth('[]');
    const path = `${selected()}&watch=true&allowWatchBookmarks=true&timeoutSeconds=2&resourceVersion=0`;
    const data = { 'models.json': '[{"modelName":"a"}]' };
    const later = (change: () => unknown) => async (): Promise<void> => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await change();
    };
    const real = await get(
      controlPlane.plane.url,
      path,
      bearer(),
      later(() =>
        controlPlane.plane.apply({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name, namespace },
          data,
        }),
      ),
    );
    const fromStandIn = await get(
      standIn.url,
      path,
      bearer(),
      later(() => standIn.apply(data)),
    );
    // A real server's watch cache sends a BOOKMARK 2 s before the end (here: at once) and may send another on a
    // later tick of its timer: the events apart from the bookmarks are compared, and that each sent one.
    const changes = (answer: Answer) => ({
      ...shape(answer),
      documents: answer.documents.filter((event) => event['type'] !== 'BOOKMARK').map(shapeOf),
    });
    const bookmarks = (answer: Answer) =>
      answer.documents.filter((event) => event['type'] === 'BOOKMARK').map(shapeOf);
    expect(changes(fromStandIn)).toEqual(changes(real));
    expect(changes(real).documents.map((event) => (event as { type: string }).type)).toEqual([
      'ADDED',
      'MODIFIED',
    ]);
    expect(bookmarks(fromStandIn)).toEqual([bookmarks(real)[0]]);
  });

  it('a watch from a version the server has not reached (its etcd restored from an older backup): 200, then nothing, not even a BOOKMARK, until timeoutSeconds', async () => {
    await applyBoth('[]');
    const listed = (await get(controlPlane.plane.url, selected(), bearer())).documents[0]!;
    const ahead = (version: number): string =>
      `${selected()}&watch=true&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion=${version + 1000}`;
    const real = shape(
      await get(
        controlPlane.plane.url,
        ahead(Number(field(listed, 'metadata', 'resourceVersion'))),
        bearer(),
      ),
    );
    expect(real).toEqual({ status: 200, contentType: 'application/json', documents: [] });
    const standInListed = (await get(standIn.url, selected(), bearer())).documents[0]!;
    const fromStandIn = shape(
      await get(standIn.url, ahead(Number(field(standInListed, 'metadata', 'resourceVersion'))), bearer()),
    );
    expect(fromStandIn).toEqual(real);
  });

  // Last: it restarts the API server, so that its watch cache starts after the compaction.
  it('a version compacted away: a watch from it and a list pinned to it (resourceVersionMatch=Exact)', async () => {
    const { plane } = controlPlane;
    await applyBoth('[]');
    const listed = (await get(plane.url, selected(), bearer())).documents[0]!;
    const old = String(field(listed, 'metadata', 'resourceVersion'));
    await applyBoth('[{"modelName":"b"}]');
    await applyBoth('[{"modelName":"c"}]');
    await plane.compactEtcd();
    await plane.restartApiServer('SIGTERM');
    standIn.expire('event');
    const watch = `${selected()}&watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=`;
    const real = shape(await get(plane.url, `${watch}${old}`, bearer()));
    // A version the stand-in compacted away (each of its changes moved it on by one from 1).
    const standInOld = '2';
    expect(shape(await get(standIn.url, `${watch}${standInOld}`, bearer()))).toEqual(real);
    const pinned = `${selected()}&resourceVersionMatch=Exact&resourceVersion=`;
    const realList = shape(await get(plane.url, `${pinned}${old}`, bearer()));
    expect(shape(await get(standIn.url, `${pinned}${standInOld}`, bearer()))).toEqual(realList);
  });
});
