/**
 * promClient: the parts of prom-client the metrics use (its registry, three metric types, its bucket maker and its
 * default metrics), loaded without its index, which also loads its Pushgateway (node:https, node:tls, node:zlib)
 * and its cluster aggregator: measured on Node 24, ~3 MiB of RSS an agent never uses. Loaded with the HTTP surface
 * (lazy-module.ts), not by every start: prom-client took 26 ms of each start's module loading, and a run without the
 * surface (`--http-port 0`, the storage initializer) never needs it.
 *
 * prom-client has no `exports` map, so its files are reachable; its version is pinned (package.json), and
 * `test/surface/prom-client-parts.test.ts` checks each part is the very one the index exports.
 */
import type * as PromClient from 'prom-client';
import { lazyModule } from '../core/lazy-module';

type Parts = Pick<
  typeof PromClient,
  'Registry' | 'Counter' | 'Gauge' | 'Histogram' | 'exponentialBuckets' | 'collectDefaultMetrics'
>;

/* eslint-disable @typescript-eslint/no-require-imports -- prom-client's own files, without its index (above) */
export const promClient = lazyModule((): Parts => ({
  Registry: require('prom-client/lib/registry') as Parts['Registry'],
  Counter: require('prom-client/lib/counter') as Parts['Counter'],
  Gauge: require('prom-client/lib/gauge') as Parts['Gauge'],
  Histogram: require('prom-client/lib/histogram') as Parts['Histogram'],
  exponentialBuckets: (require('prom-client/lib/bucketGenerators') as Pick<Parts, 'exponentialBuckets'>)
    .exponentialBuckets,
  collectDefaultMetrics: require('prom-client/lib/defaultMetrics') as Parts['collectDefaultMetrics'],
}));
/* eslint-enable @typescript-eslint/no-require-imports */
