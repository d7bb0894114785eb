/**
 * promClient: prom-client's parts loaded without its index are the index's own. prom-client's files are not a
 * published interface: a release that moves them fails here, by name.
 */
import * as promIndex from 'prom-client';
import { promClient } from '../../src/surface/prom-client-parts';

describe('promClient', () => {
  it("is prom-client's own Registry, metric types, bucket maker and default metrics, not copies", () => {
    const parts = promClient();
    expect(parts.Registry).toBe(promIndex.Registry);
    expect(parts.Counter).toBe(promIndex.Counter);
    expect(parts.Gauge).toBe(promIndex.Gauge);
    expect(parts.Histogram).toBe(promIndex.Histogram);
    expect(parts.exponentialBuckets).toBe(promIndex.exponentialBuckets);
    expect(parts.collectDefaultMetrics).toBe(promIndex.collectDefaultMetrics);
  });
});
