/** What the demo prints of the agent's HTTP surface, read from a stand-in surface over real HTTP. */
import { changedMetrics, metricSamples, statusLines, surfaceView } from '../../src/demo/demo-surface';
import { useHttpServers } from '../helpers/http-servers';

const serve = useHttpServers();

const metricsPage = (loaded: number, downloads: number): string =>
  [
    '# HELP modelsync_models Models by phase.',
    '# TYPE modelsync_models gauge',
    `modelsync_models{phase="Loaded"} ${loaded}`,
    `modelsync_downloads_total{result="ok",scheme="file"} ${downloads}`,
    'modelsync_download_seconds_bucket{le="1"} 3',
    'process_cpu_seconds_total 0.5',
  ].join('\n');

describe('statusLines', () => {
  it('prints each model of a listed or keyed /status document with its phase, attempts and last failure', () => {
    const failed = { phase: 'Failed', attempts: 1, errorKind: 'not-found', reason: 'no such path' };
    expect(
      statusLines({
        models: [
          { model: 'iris', phase: 'Loaded', attempts: 1 },
          { model: 'ghost', ...failed },
        ],
      }),
    ).toEqual([
      'iris     Loaded      attempts 1',
      'ghost    Failed      attempts 1  not-found: no such path',
    ]);
    expect(
      statusLines({
        models: { ghost: { phase: 'Failed', error: { kind: 'refused', message: 'outside the roots' } } },
      }),
    ).toEqual(['ghost    Failed      attempts 0  refused: outside the roots']);
  });

  it('adds the config part as it comes, and prints nothing for a document without models', () => {
    expect(statusLines({ models: [], config: { lastAccepted: 't1' } })).toEqual([
      'config: {"lastAccepted":"t1"}',
    ]);
    expect(statusLines('not a document')).toEqual([]);
  });
});

describe('metrics', () => {
  it('keeps modelsync samples without histogram buckets, and tells which moved', () => {
    const before = metricSamples(metricsPage(1, 1));
    expect([...before.keys()]).toEqual([
      'modelsync_models{phase="Loaded"}',
      'modelsync_downloads_total{result="ok",scheme="file"}',
    ]);
    expect(changedMetrics(before, metricSamples(metricsPage(2, 1)))).toEqual([
      'modelsync_models{phase="Loaded"} 1 → 2',
    ]);
    expect(changedMetrics(new Map(), before, 1)).toEqual([
      'modelsync_models{phase="Loaded"} 0 → 1',
      '… and 1 more',
    ]);
  });
});

describe('surfaceView', () => {
  it('reads /status and /metrics and shows what moved since its last look', async () => {
    let loaded = 1;
    const server = await serve((request, response) => {
      if (request.url === '/status')
        response.end(JSON.stringify({ models: [{ model: 'iris', phase: 'Loaded', attempts: loaded }] }));
      else if (request.url === '/metrics') response.end(metricsPage(loaded, 1));
      else response.writeHead(404).end();
    });
    const view = surfaceView(server.url);
    const first = await view.show();
    expect(first).toContain(`GET ${server.url}/metrics: what moved`);
    expect(first).toContain('  iris     Loaded      attempts 1');
    expect(await view.show()).toContain(`GET ${server.url}/metrics: nothing moved`);
    loaded = 2;
    expect(await view.show()).toContain('  modelsync_models{phase="Loaded"} 1 → 2');
  });

  it('fails naming the path when the surface answers an error', async () => {
    const server = await serve((_request, response) => response.writeHead(503).end());
    await expect(surfaceView(server.url).show()).rejects.toThrow('answered 503');
  });
});
