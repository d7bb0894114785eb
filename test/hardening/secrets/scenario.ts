/**
 * The secrets suite's scenario: secrets planted in every place a user can put one — storage URIs of every
 * scheme, download headers, config fields, archive entry names — and a hostile storage server that echoes
 * URLs, signatures and headers back in its error bodies, so every kind of failure has a secret to repeat.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tarball } from '../../storage/archive/builders';
import type { HttpHandler, RunningHttpServer } from '../../../src/testing/http-server';
import { closedPort } from '../../helpers/http-servers';
import { secretValues, type PlantedSecret } from '../../helpers/secrets';

/** How a model of the scenario ends, and with what kind of failure. */
export interface Outcome {
  readonly phase: 'Loaded' | 'Failed';
  readonly errorKind?: string;
}

/** The planted secrets, where they were planted, and how each model must end. */
export interface SecretsScenario {
  readonly secrets: ReadonlyArray<PlantedSecret>;
  /** `<host>-headers` for the storage host: a Bearer token and an API key with no recognisable shape. */
  readonly env: Readonly<Record<string, string>>;
  /** How each model of the scenario ends: one model per kind of failure, each URI carrying a secret. */
  readonly outcomes: Readonly<Record<string, Outcome>>;
  /** models.json listing the scenario's models, but those named in `except`. */
  modelsJson(except?: ReadonlyArray<string>): string;
  /** models.json texts the agent must reject, each quoting a secret the way users get it wrong. */
  readonly badConfigs: ReadonlyArray<string>;
  readonly storage: RunningHttpServer;
}

/** What the hostile storage server says back: the request line and every credential header it got. */
const echo = (req: IncomingMessage): string =>
  `request ${req.url ?? ''}; authorization: ${req.headers.authorization ?? ''}; ` +
  `x-api-key: ${String(req.headers['x-api-key'] ?? '')}`;

/** A hostile storage server: every failure repeats what the request carried. */
const hostileStorage =
  (escapeEntry: string): HttpHandler =>
  (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://storage');
    const text = (status: number, body: string, type = 'text/plain'): void =>
      void res.writeHead(status, { 'content-type': type }).end(body);
    switch (url.pathname) {
      case '/ok/model.bin':
        return text(200, 'weights', 'application/octet-stream');
      case '/missing.bin':
        return text(404, `NoSuchKey: ${echo(req)}`);
      case '/err500.bin':
        return text(500, `InternalError: ${echo(req)}`);
      case '/denied.bin': {
        // S3's SignatureDoesNotMatch body repeats the signature and the key id it was given.
        const xml =
          '<Error><Code>SignatureDoesNotMatch</Code>' +
          `<AWSAccessKeyId>${url.searchParams.get('X-Amz-Credential')?.split('/')[0] ?? ''}</AWSAccessKeyId>` +
          `<SignatureProvided>${url.searchParams.get('X-Amz-Signature') ?? ''}</SignatureProvided></Error>`;
        return text(403, xml, 'application/xml');
      }
      case '/hang.bin':
        return; // never answers: the download times out
      case '/bad.tar.gz':
        return text(200, `not a gzip stream; ${echo(req)}`, 'application/gzip');
      case '/escape.tar':
        return void res
          .writeHead(200, { 'content-type': 'application/x-tar' })
          .end(tarball([{ name: escapeEntry, content: 'x' }]));
      case '/basic.bin':
        // A store that quotes the Basic authorization it was sent (the URI's user:password) in its refusal.
        return text(401, `Unauthorized: ${req.headers.authorization ?? 'none'}`);
      case '/redirect':
        return void res.writeHead(302, { location: `/missing.bin?${url.searchParams.toString()}` }).end();
      default:
        return text(404, `not found: ${echo(req)}`);
    }
  };

/** Starts the hostile storage server (closed with `serve`'s servers) and plants the secrets. */
export const secretsScenario = async (
  serve: (handler: HttpHandler) => Promise<RunningHttpServer>,
): Promise<SecretsScenario> => {
  const v = secretValues();
  const s = { ...secretValues(), more: secretValues() };
  const secrets: PlantedSecret[] = [
    { label: 'header Bearer token', value: v.token },
    { label: 'header API key (no shape)', value: s.more.token },
    { label: 'userinfo password', value: v.password },
    { label: 'userinfo as Basic', value: Buffer.from(`alice:${v.password}`).toString('base64') },
    { label: 'scheme-less userinfo password', value: s.password },
    { label: 'X-Amz-Signature of a served model', value: v.amzSignature },
    { label: 'X-Amz-Signature of a missing model', value: s.amzSignature },
    { label: 'X-Amz-Signature echoed in XML', value: s.more.amzSignature },
    { label: 'AWS access key id', value: v.awsKeyId },
    { label: 'AWS key id in an archive entry name', value: s.awsKeyId },
    { label: 'AWS secret key in s3:// user info', value: v.awsSecretKey },
    { label: 'Azure SAS signature', value: v.sasSignature },
    { label: 'Azure account key', value: v.accountKey },
    { label: 'GCS signature', value: v.googSignature },
    { label: 'access_token of a refused download', value: s.token },
    { label: 'token of a hanging download', value: s.more.password },
    { label: 'sig of a bad archive', value: s.sasSignature },
    { label: 'token of a redirect', value: s.more.sasSignature },
    { label: 'security token', value: s.more.accountKey },
    { label: 'Bearer token in a config field', value: s.googSignature },
  ];
  const escapeEntry = `../leak-${s.awsKeyId}/weights.bin`;
  const storage = await serve(hostileStorage(escapeEntry));
  const base = storage.url;
  const host = new URL(base).host;
  const refused = await closedPort();
  const credential = `${v.awsKeyId}%2F20250101%2Fus-east-1%2Fs3%2Faws4_request`;
  const sigv4 = (signature: string): string =>
    `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=${credential}&X-Amz-Date=20250101T000000Z` +
    `&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=${signature}`;
  const uris: Record<string, readonly [string, Outcome]> = {
    'ok-presigned': [`${base}/ok/model.bin?${sigv4(v.amzSignature)}`, { phase: 'Loaded' }],
    // Sent as Basic to its own server (as KServe does), which quotes it back in its refusal.
    userinfo: [`http://alice:${v.password}@${host}/basic.bin`, { phase: 'Failed', errorKind: 'http-status' }],
    'not-found': [
      `${base}/missing.bin?${sigv4(s.amzSignature)}`,
      { phase: 'Failed', errorKind: 'http-status' },
    ],
    'signature-mismatch': [
      `${base}/denied.bin?${sigv4(s.more.amzSignature)}`,
      { phase: 'Failed', errorKind: 'http-status' },
    ],
    'server-error': [
      `${base}/err500.bin?sv=2022-11-02&sp=r&se=2030-01-01&sig=${encodeURIComponent(v.sasSignature)}`,
      { phase: 'Failed', errorKind: 'http-status' },
    ],
    refused: [
      `http://127.0.0.1:${refused}/m.bin?access_token=${s.token}`,
      { phase: 'Failed', errorKind: 'network' },
    ],
    hang: [`${base}/hang.bin?token=${s.more.password}`, { phase: 'Failed', errorKind: 'timeout' }],
    'bad-archive': [
      `${base}/bad.tar.gz?sig=${encodeURIComponent(s.sasSignature)}`,
      { phase: 'Failed', errorKind: 'invalid-archive' },
    ],
    'escaping-archive': [`${base}/escape.tar`, { phase: 'Failed', errorKind: 'refused' }],
    redirect: [
      `${base}/redirect?sig=${encodeURIComponent(s.more.sasSignature)}`,
      { phase: 'Failed', errorKind: 'http-status' },
    ],
    s3: [
      `s3://${v.awsKeyId}:${encodeURIComponent(v.awsSecretKey)}@bucket/model?x-amz-security-token=${encodeURIComponent(s.more.accountKey)}`,
      { phase: 'Failed', errorKind: 'invalid-uri' },
    ],
    // gs:// is served since issue #8: a bucket name GCS cannot have fails before any request, naming the URI.
    gs: [
      `gs://Not_A_Bucket/model.bin?X-Goog-Signature=${v.googSignature}`,
      { phase: 'Failed', errorKind: 'invalid-uri' },
    ],
    'azure-connection-string': [
      `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${v.accountKey};EndpointSuffix=core.windows.net`,
      { phase: 'Failed', errorKind: 'invalid-uri' },
    ],
    'scheme-less-userinfo': [
      `bob:${s.password}@storage.example/model.bin`,
      { phase: 'Failed', errorKind: 'invalid-uri' },
    ],
  };
  const badConfigs = [
    // Cut short: V8's JSON.parse message quotes the text around the error.
    `[{"modelName":"m","modelSpec":{"storageUri":"${base}/x?sig=${encodeURIComponent(v.sasSignature)}"}}, oops]`,
    JSON.stringify([
      { modelName: 'm', modelSpec: { storageUri: `${base}/m.bin`, memory: `Bearer ${s.googSignature}` } },
    ]),
    JSON.stringify([{ modelName: 'm', modelSpec: { storageUri: 42, framework: `sig=${v.sasSignature}` } }]),
  ];
  return {
    secrets,
    env: {
      [`${new URL(base).hostname}-headers`]: JSON.stringify({
        Authorization: `Bearer ${v.token}`,
        'X-Api-Key': s.more.token,
      }),
    },
    outcomes: Object.fromEntries(Object.entries(uris).map(([name, [, outcome]]) => [name, outcome])),
    modelsJson: (except = []) =>
      JSON.stringify(
        Object.entries(uris)
          .filter(([modelName]) => !except.includes(modelName))
          .map(([modelName, [storageUri]]) => ({
            modelName,
            modelSpec: { storageUri, framework: 'sklearn' },
          })),
      ),
    badConfigs,
    storage,
  };
};
