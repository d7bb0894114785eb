/**
 * A real S3-protocol server for tests: s3rver in a child process (its listing tokens use DES, which Node 20's
 * OpenSSL 3 offers only under --openssl-legacy-provider), keys of the test's choosing, a client to fill it, and
 * the SigV4 check s3rver skips (it only looks the access key id up).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { forEachLimited } from '../../src/fs/durable-fs';
import { withTimeout } from '../../src/testing/wait';
import type { FaultRule } from './fault-proxy';
import { removeTempDir, tempDir } from './temp-dir';

/** An access key pair s3rver knows. */
export interface S3Keys {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** A running s3rver. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`: path-style endpoint. */
  readonly url: string;
  readonly port: number;
  /** The keys it accepts (fresh random ones: a leak can only come from this run). */
  readonly keys: S3Keys;
  /** Creates `bucket`. */
  createBucket(bucket: string): Promise<void>;
  /** Stores each `objects` entry (key → content) in `bucket`, a few at a time. */
  put(bucket: string, objects: Readonly<Record<string, string | Buffer>>): Promise<void>;
  close(): Promise<void>;
}

// Runs in the child: registers the test's keys with s3rver's one account, listens on a free port, says which.
const serverScript = `
const S3rver = require('s3rver');
const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account');
const keys = JSON.parse(process.env.S3RVER_KEYS);
DUMMY_ACCOUNT.createKeyPair(keys.accessKeyId, keys.secretAccessKey);
const server = new S3rver({
  address: '127.0.0.1', port: 0, silent: true, directory: process.env.S3RVER_DIR, serviceEndpoint: 'localhost',
});
server.run().then(({ port }) => console.log(JSON.stringify({ port })));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

const randomKey = (bytes: number): string =>
  createHash('sha256').update(`${Math.random()}`).digest('hex').slice(0, bytes);

/** Fresh keys with the shapes real ones have. */
export const freshS3Keys = (): S3Keys => ({
  accessKeyId: `AKIA${randomKey(16).toUpperCase()}`,
  secretAccessKey: `${randomKey(40)}`,
});

const exited = (child: ChildProcess): Promise<void> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()));

/** Starts s3rver on 127.0.0.1 with fresh keys and an empty store; `close` stops it and deletes its files. */
export const startS3Server = async (): Promise<S3Server> => {
  const directory = await tempDir('s3rver');
  const keys = freshS3Keys();
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '-e', serverScript], {
    cwd: path.join(__dirname, '..', '..'),
    env: { ...process.env, S3RVER_KEYS: JSON.stringify(keys), S3RVER_DIR: directory },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const close = async (): Promise<void> => {
    child.stdin?.end();
    await withTimeout(exited(child), 5000, 's3rver to exit').catch(() => child.kill('SIGKILL'));
    await removeTempDir(directory);
  };
  let port: number;
  try {
    const lines = createInterface({ input: child.stdout });
    const first = new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`s3rver exited (${code}) before listening`)));
    });
    port = (JSON.parse(await withTimeout(first, 20_000, 's3rver to listen')) as { port: number }).port;
  } catch (error) {
    await close();
    throw error;
  }
  const url = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint: url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: keys,
    requestChecksumCalculation: 'WHEN_REQUIRED',
  });
  return {
    url,
    port,
    keys,
    createBucket: async (bucket) => {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
    },
    put: (bucket, objects) =>
      forEachLimited(Object.entries(objects), 16, async ([key, body]) => {
        const bytes = Buffer.from(body);
        await client.send(
          new PutObjectCommand({ Bucket: bucket, Key: key, Body: bytes, ContentLength: bytes.length }),
        );
      }),
    close: async () => {
      client.destroy();
      await close();
    },
  };
};

/** The fields of a SigV4 Authorization header. */
const parseAuthorization = (header: string) => {
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      header,
    );
  if (match === null) return undefined;
  const [, accessKeyId, date, region, service, signedHeaders, signature] = match;
  return {
    accessKeyId: accessKeyId!,
    date: date!,
    region: region!,
    service: service!,
    signedHeaders: signedHeaders!.split(';'),
    signature: signature!,
  };
};

const encode = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The SigV4 signature `request` should carry when signed with `secret` (S3's rules: the path as sent). */
const expectedSignature = (
  request: IncomingMessage,
  secret: string,
  auth: NonNullable<ReturnType<typeof parseAuthorization>>,
): string => {
  const url = new URL(request.url ?? '/', 'http://x');
  const query = [...url.searchParams]
    .map(([name, value]) => [encode(name), encode(value)] as const)
    .sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const headerLines = auth.signedHeaders.map((name) => {
    const value = request.headers[name];
    return `${name}:${(Array.isArray(value) ? value.join(',') : (value ?? '')).trim().replace(/\s+/g, ' ')}\n`;
  });
  const payloadHash = String(request.headers['x-amz-content-sha256'] ?? 'UNSIGNED-PAYLOAD');
  // The path exactly as sent: S3 signs it without normalising (URL would resolve dot segments).
  const rawPath = (request.url ?? '/').split('?')[0]!;
  const canonical = [
    request.method,
    rawPath,
    query,
    headerLines.join(''),
    auth.signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const toSign = [
    'AWS4-HMAC-SHA256',
    String(request.headers['x-amz-date']),
    scope,
    createHash('sha256').update(canonical).digest('hex'),
  ].join('\n');
  const hmac = (key: string | Buffer, text: string): Buffer =>
    createHmac('sha256', key).update(text).digest();
  const signingKey = [auth.region, auth.service, 'aws4_request'].reduce(
    (key, part) => hmac(key, part),
    hmac(`AWS4${secret}`, auth.date),
  );
  return createHmac('sha256', signingKey).update(toSign).digest('hex');
};

/** An S3 error answer, as S3 writes it. */
const s3ErrorAnswer = (status: number, code: string, message: string) => ({
  status,
  headers: { 'content-type': 'application/xml' },
  body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>test</RequestId></Error>`,
});

/**
 * A fault-proxy rule that checks the SigV4 signature of every signed request against `keys`, answering as S3 does
 * (`InvalidAccessKeyId`, `SignatureDoesNotMatch`, 403) when it is wrong; unsigned requests pass.
 */
export const checkSignatures = (keys: S3Keys): FaultRule => {
  const verdict = (request: IncomingMessage): string | undefined => {
    const header = request.headers.authorization;
    if (header === undefined) return undefined;
    const auth = parseAuthorization(header);
    if (auth === undefined) return 'malformed';
    if (auth.accessKeyId !== keys.accessKeyId) return 'InvalidAccessKeyId';
    return expectedSignature(request, keys.secretAccessKey, auth) === auth.signature
      ? undefined
      : 'SignatureDoesNotMatch';
  };
  return {
    when: (request) => verdict(request) !== undefined,
    times: Number.POSITIVE_INFINITY,
    answer: (request) =>
      verdict(request) === 'InvalidAccessKeyId'
        ? s3ErrorAnswer(
            403,
            'InvalidAccessKeyId',
            'The AWS Access Key Id you provided does not exist in our records.',
          )
        : s3ErrorAnswer(
            403,
            'SignatureDoesNotMatch',
            'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
          ),
  };
};

/** A fault-proxy rule answering S3's throttling (`503 SlowDown`) to the next `times` requests `when` matches. */
export const slowDown = (when: (request: IncomingMessage) => boolean, times: number): FaultRule => ({
  when,
  times,
  answer: () => s3ErrorAnswer(503, 'SlowDown', 'Please reduce your request rate.'),
});
