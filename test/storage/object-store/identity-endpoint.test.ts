/**
 * A content's identity names the store that answered, not only the URI: the node cache is shared by every pod of
 * a node, and a pod whose S3 or GCS endpoint is another (a tenant's own MinIO or emulator, listing the same bucket,
 * keys, sizes and ETags as the real store) must never publish an entry that a pod reading the real store then fills
 * from (docs/operating.md, The node cache).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer, type RunningHttpServer } from '../../../src/testing/http-server';
import { cliDownloadLimits } from '../../helpers/cli-limits';
import { stores } from '../../helpers/raw-stores';

const never = new AbortController().signal;

describe.each(Object.keys(stores))('the identity a %s download offers', (kind) => {
  const store = stores[kind]!;
  const servers: RunningHttpServer[] = [];
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'identity-endpoint-'));
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    await rm(dir, { recursive: true, force: true });
  });

  /** The identity a provider pointed at a fresh server offers for the one model that server lists. */
  const offeredAt = async (): Promise<string> => {
    const server = await startHttpServer((request, response) =>
      store.good(new URL(request.url ?? '/', 'http://x'), response),
    );
    servers.push(server);
    const offered: string[] = [];
    const reuse = (identity: string): Promise<boolean> => {
      offered.push(identity);
      return Promise.resolve(true); // taken: nothing is read
    };
    const target = await mkdtemp(join(dir, 't-'));
    await store
      .provider(server.url, cliDownloadLimits)
      .download(store.uri(server.url), target, never, undefined, { reuse });
    expect(offered).toHaveLength(1);
    return offered[0]!;
  };

  it('differs between two endpoints that list the same objects alike', async () => {
    const [first, second] = [await offeredAt(), await offeredAt()];
    expect(first).not.toBe(second);
  });
});
