/** A server playing "elsewhere" for credential tests: it records everything it hears, so a test can say what never got there. */
import type { IncomingHttpHeaders } from 'node:http';
import type { HttpHandler } from '../../src/testing/http-server';

/** One request as it arrived: everything a credential could travel in. */
export interface HeardRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What a recording server heard, and its handler. */
export interface Ear {
  readonly heard: HeardRequest[];
  readonly handler: HttpHandler;
}

/** A handler that records each request (its body read whole first), then answers it with `answer`. */
export const recording = (answer: HttpHandler): Ear => {
  const heard: HeardRequest[] = [];
  const handler: HttpHandler = async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    heard.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    return answer(req, res);
  };
  return { heard, handler };
};

/** A secret as it may travel: as it is, URL-encoded, and as the credentials of a `Basic`/`Bearer` value. */
const formsOf = (secret: string): string[] => [
  secret,
  encodeURIComponent(secret),
  Buffer.from(secret).toString('base64'),
];

/**
 * Fails unless `ear` was reached at least once and none of `secrets` is in anything it heard (headers — the
 * Authorization, Cookie and x-amz-* ones included —, URLs with their queries, bodies).
 */
export const expectNoneHeard = (ear: Ear, secrets: ReadonlyArray<string>): void => {
  expect(ear.heard.length).toBeGreaterThan(0);
  const text = JSON.stringify(ear.heard);
  const found = secrets.flatMap(formsOf).filter((form) => form.length >= 6 && text.includes(form));
  expect(found).toEqual([]);
};

/** The headers a request carries that authenticate it, by name (for the asserts that say what was sent). */
export const authHeaders = (request: HeardRequest): Readonly<Record<string, unknown>> =>
  Object.fromEntries(
    Object.entries(request.headers).filter(([name]) =>
      /^(authorization|proxy-authorization|cookie|x-api-key|x-amz-security-token|x-ms-.*auth.*)$/.test(name),
    ),
  );
