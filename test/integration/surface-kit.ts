/** What the HTTP surface's process tests share: a free port, timed GETs, and reading /metrics samples. */
import { createServer, type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ModelStatusJson, StatusDocumentJson, StatusSummary } from '../../src/core/status-document';

/** A port free on 127.0.0.1 right now. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });

/** One answer of the surface, and how long it took from sending to the whole body. */
export interface Answer {
  readonly path: string;
  readonly status: number;
  readonly body: string;
  readonly ms: number;
}

/** GETs `path` on 127.0.0.1:`port`. */
export const get = async (port: number, path: string): Promise<Answer> => {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(10_000) });
  const body = await response.text();
  return { path, status: response.status, body, ms: performance.now() - started };
};

/** GETs `path` and parses its JSON body. */
export const getJson = async <T = Record<string, unknown>>(
  port: number,
  path: string,
): Promise<{ readonly status: number; readonly json: T }> => {
  const answer = await get(port, path);
  return { status: answer.status, json: JSON.parse(answer.body) as T };
};

/** Every model of /status, page after page (`page.next`), and the first page's summary. */
export const statusModels = async (
  port: number,
): Promise<{ readonly models: ReadonlyArray<ModelStatusJson>; readonly summary: StatusSummary }> => {
  const models: ModelStatusJson[] = [];
  let summary: StatusSummary | undefined;
  for (let after: string | undefined = ''; after !== undefined;) {
    const query: string = after === '' ? '' : `?after=${encodeURIComponent(after)}`;
    const { json }: { json: StatusDocumentJson } = await getJson<StatusDocumentJson>(port, `/status${query}`);
    summary ??= json.summary;
    models.push(...json.models);
    after = json.page.next;
  }
  return { models, summary: summary! };
};

/** The value of the sample `name{labels}` (labels as written, in the order prom-client writes them), or 0. */
export const sample = (page: string, series: string): number => {
  const line = page.split('\n').find((text) => text.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
};
