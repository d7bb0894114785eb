/**
 * Model servers answering anything at all: the V2 client (every server kind) and the TorchServe client against a
 * server on 127.0.0.1 whose every answer fast-check draws — any status, content type and body (JSON of any
 * shape, truncated JSON, text, nothing). Every call resolves or rejects with a classified EffectError, and what
 * loadedModels reports is only valid model names.
 */
import fc from 'fast-check';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EffectError } from '../../../src/core/errors';
import { modelNameProblem, type ModelName } from '../../../src/core/model-name';
import { torchServeModelServer } from '../../../src/model-server/torchserve';
import { v2ModelServer } from '../../../src/model-server/v2';
import type { ModelServer } from '../../../src/ports';
import { startHttpServer, type RunningHttpServer } from '../../../src/testing/http-server';

jest.setTimeout(120_000);

interface Answer {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: string;
}

/** JSON values of the shapes a server's answer can take, names and states among them. */
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.constantFrom('READY', 'UNAVAILABLE', 'm', '', '.tmp-m', 'lost+found', 'a/b', '..'),
    fc.string(),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.constantFrom('name', 'state', 'version', 'reason', 'models', 'modelName', 'nextPageToken', 'error'),
      tie('value'),
      { maxKeys: 4 },
    ),
  ),
})).value;

const answers: fc.Arbitrary<Answer> = fc.record({
  status: fc.constantFrom(200, 200, 200, 201, 204, 301, 400, 404, 409, 422, 429, 500, 503),
  contentType: fc.constantFrom(undefined, 'application/json', 'text/plain', 'text/html'),
  body: fc.oneof(
    json.map((value) => JSON.stringify(value)),
    json.map((value) => JSON.stringify(value).slice(0, -1)),
    fc.string(),
    fc.constant(''),
  ),
});

let server: RunningHttpServer;
let answer: Answer = { status: 200, contentType: undefined, body: '' };

beforeAll(async () => {
  server = await startHttpServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    const headers = answer.contentType === undefined ? {} : { 'Content-Type': answer.contentType };
    res.writeHead(answer.status, headers).end(answer.status === 204 ? undefined : answer.body);
  });
});
afterAll(() => server.close());

const never = new AbortController().signal;
const name = 'm' as ModelName;

/** The outcome of `call`: fine, or an EffectError of a kind some edge gave it; anything else fails the test. */
const settled = async (call: () => Promise<unknown>): Promise<unknown> => {
  try {
    return await call();
  } catch (error) {
    expect(error).toBeInstanceOf(EffectError);
    expect((error as EffectError).kind).not.toBe('unknown');
    return undefined;
  }
};

const clients: ReadonlyArray<readonly [string, () => ModelServer]> = [
  ...(['generic', 'triton', 'mlserver', 'kserve', 'auto'] as const).map(
    (kind) =>
      [
        `V2 (${kind})`,
        () => v2ModelServer({ baseUrl: server.url, kind, timeoutMs: 2000, unloadPollMs: 5 }),
      ] as const,
  ),
  ['TorchServe', () => torchServeModelServer({ baseUrl: server.url, timeoutMs: 2000 })],
];

describe.each(clients)('the %s client, whatever the server answers', (_label, make) => {
  it('settles every call with a result or a classified EffectError; lists valid names only', async () => {
    await fc.assert(
      fc.asyncProperty(answers, async (drawn) => {
        answer = drawn;
        const client = make();
        const loaded = await settled(() => client.loadedModels(never));
        if (loaded !== undefined)
          for (const model of loaded as ReadonlySet<string>) expect(modelNameProblem(model)).toBeUndefined();
        await settled(() => client.load(name, false, never));
        await settled(() => client.unload(name, never));
      }),
      { numRuns: 60 },
    );
  });
});
