/** One raw HTTP/1.1 exchange to a base URL, bytes in and out: the proxy harness's `send`, for comparing answers. */
import { send, valuesOf, type Answer } from '../net/reverse-proxy-harness';

/** An answer as it came (`send`'s), and one header's first value by name. */
export interface Exchanged extends Answer {
  readonly header: (name: string) => string | undefined;
}

/** `method` `base + path` with `headers` and `body`, on a connection of its own. */
export const exchange = async (
  base: string,
  method: string,
  path: string,
  headers: Readonly<Record<string, string>> = {},
  body?: Buffer | string,
): Promise<Exchanged> => {
  const answer = await send(Number(new URL(base).port), {
    method,
    path,
    headers: { ...headers },
    ...(body !== undefined ? { body: Buffer.from(body) } : {}),
  });
  return { ...answer, header: (name) => valuesOf(answer.rawHeaders, name)[0] };
};

/** The header pairs that say what the answer is, without the ones a hop may set (date, connection, keep-alive). */
export const endToEndHeaders = (answer: Answer): Array<[string, string]> => {
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i < answer.rawHeaders.length; i += 2) {
    const name = answer.rawHeaders[i]!;
    if (!['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(name.toLowerCase()))
      pairs.push([name, answer.rawHeaders[i + 1]!]);
  }
  return pairs;
};
