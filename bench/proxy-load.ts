/** The clients of the proxy suite: one exchange timed and its answer checked whole, and a crowd of them. */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

/** One request: what is sent, and how many bytes a whole answer has. */
export interface Exchange {
  readonly path: string;
  /** A POST's body (sent with a Content-Length); none: a GET. */
  readonly body?: Buffer;
  readonly answerBytes: number;
}

/**
 * How one exchange ended: `whole` (200, every byte), `short` (a 200 whose body stopped before its length: a cut
 * answer) or `failed` (no answer, or not a 200).
 */
export type Outcome = 'whole' | 'short' | 'failed';

export interface Exchanged {
  readonly ms: number;
  readonly bytes: number;
  readonly outcome: Outcome;
}

/** Sends `exchange` to 127.0.0.1:`port` on `agent`; resolves (never rejects) with the ms to its last byte and how it ended. */
export const exchange = (
  agent: Agent,
  port: number,
  { path, body, answerBytes }: Exchange,
): Promise<Exchanged> =>
  new Promise((resolve) => {
    const started = performance.now();
    let settled = false;
    const settle = (bytes: number, outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      resolve({ ms: performance.now() - started, bytes, outcome });
    };
    const method = body === undefined ? 'GET' : 'POST';
    const headers =
      body === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': body.length };
    const client = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('error', () => undefined); // 'close' says how it ended
      res.on('close', () => {
        if (res.statusCode !== 200) return settle(bytes, 'failed');
        settle(bytes, res.complete && bytes === answerBytes ? 'whole' : 'short');
      });
      if (res.statusCode !== 200) res.resume();
    });
    client.on('error', () => settle(0, 'failed'));
    client.end(body);
  });

/** Answers that did not come whole, by how. */
export interface Tally {
  short: number;
  failed: number;
}

export const noTally = (): Tally => ({ short: 0, failed: 0 });

/** Adds what one exchange, or a crowd (`more`), did to `tally`. */
export const tallied = (tally: Tally, more: Outcome | Tally): void => {
  if (more === 'short') tally.short++;
  else if (more === 'failed') tally.failed++;
  else if (typeof more === 'object') {
    tally.short += more.short;
    tally.failed += more.failed;
  }
};

/** What a crowd of exchanges did. */
export interface CrowdResult extends Tally {
  readonly bytes: number;
  readonly ms: number;
}

/** `total` of `what`, `concurrency` at once, to `port`: the answers' bytes, the wall time and how many were cut. */
export const crowd = async (
  agent: Agent,
  port: number,
  what: Exchange,
  total: number,
  concurrency: number,
): Promise<CrowdResult> => {
  const started = performance.now();
  let next = 0;
  let bytes = 0;
  let short = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (next++ < total) {
      const answer = await exchange(agent, port, what); // not `bytes += await …`: that adds to a stale sum
      bytes += answer.bytes;
      if (answer.outcome === 'short') short++;
      if (answer.outcome === 'failed') failed++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { bytes, ms: performance.now() - started, short, failed };
};
