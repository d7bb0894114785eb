/**
 * Azurite (Microsoft's Azure Storage emulator, blob service only, in memory) for tests: started once per file in a
 * child process with a fresh account key, blobs put through the real SDK, SAS tokens signed with that key, and a
 * proxy in front of it that cuts blob bodies on demand.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import path from 'node:path';
import {
  BlobServiceClient,
  ContainerClient,
  ContainerSASPermissions,
  generateBlobSASQueryParameters,
  newPipeline,
  StorageSharedKeyCredential,
  type StoragePipelineOptions,
} from '@azure/storage-blob';
import { startHttpServer, type RunningHttpServer } from '../../src/testing/http-server';
import { withTimeout } from '../../src/testing/wait';

/** A running azurite and what a test needs to talk to it. */
export interface Azurite {
  /** `http://127.0.0.1:<port>`: the endpoint; URLs are path style, `<url>/<account>/<container>/<prefix>`. */
  readonly url: string;
  readonly account: string;
  /** This run's account key (random: a leak can only come from this run). */
  readonly accountKey: string;
  /** Creates `container` (if missing) and puts each blob of `blobs` (name → content) into it. */
  put(container: string, blobs: Readonly<Record<string, string | Buffer>>): Promise<void>;
  /** A container SAS (`sv=…&sig=…`) signed with the account key, valid from `startsOn` until `expiresOn`. */
  sas(container: string, times?: { readonly startsOn?: Date; readonly expiresOn?: Date }): string;
  /** The SDK's client of `container`, with the account key. */
  container(container: string): ContainerClient;
  close(): Promise<void>;
}

const azuriteMain = path.join(__dirname, '../../node_modules/azurite/dist/src/blob/main.js');
const account = 'modelsync';

const waitForListening = (child: ChildProcess): Promise<string> =>
  new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /successfully listens on (https?:\/\/\S+)/.exec(output)?.[1];
      if (url !== undefined) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`azurite exited (${code}) before listening: ${output}`)));
  });

/** How azurite serves: over https with a certificate and key (PEM files), and taking Azure AD bearer tokens. */
export interface AzuriteOptions {
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** With `tls`: accept bearer tokens (`--oauth basic`: audience, issuer and lifetime checked, not the signature). */
  readonly oauth?: boolean;
}

/**
 * Starts azurite's blob service on a free port of 127.0.0.1: in memory (`--inMemoryPersistence`), any API version
 * (`--skipApiVersionCheck`), unknown headers ignored (`--loose`), no telemetry, one account with a fresh key.
 */
export const startAzurite = async (options: AzuriteOptions = {}): Promise<Azurite> => {
  const accountKey = randomBytes(64).toString('base64');
  const child = spawn(
    process.execPath,
    [
      azuriteMain,
      ...['--blobHost', '127.0.0.1', '--blobPort', '0', '--extentMemoryLimit', '256'],
      ...['--inMemoryPersistence', '--skipApiVersionCheck', '--loose', '--disableTelemetry', '--silent'],
      ...(options.tls !== undefined ? ['--cert', options.tls.certFile, '--key', options.tls.keyFile] : []),
      ...(options.oauth === true ? ['--oauth', 'basic'] : []),
    ],
    {
      env: { ...process.env, AZURITE_ACCOUNTS: `${account}:${accountKey}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const url = await withTimeout(waitForListening(child), 30_000, 'azurite to listen');
  const credential = new StorageSharedKeyCredential(account, accountKey);
  // The helper's own client trusts azurite's certificate; the code under test is given it as its CA bundle.
  const agent = options.tls && new HttpsAgent({ ca: readFileSync(options.tls.certFile) });
  const pipelineOptions: StoragePipelineOptions & { agent?: HttpsAgent } = agent ? { agent } : {};
  const service = new BlobServiceClient(`${url}/${account}`, newPipeline(credential, pipelineOptions));
  const container = (name: string) => service.getContainerClient(name);
  return {
    url,
    account,
    accountKey,
    container,
    put: async (name, blobs) => {
      await container(name).createIfNotExists();
      for (const [blob, content] of Object.entries(blobs)) {
        const data = Buffer.from(content);
        await container(name).getBlockBlobClient(blob).upload(data, data.length);
      }
    },
    sas: (name, times = {}) =>
      generateBlobSASQueryParameters(
        {
          containerName: name,
          permissions: ContainerSASPermissions.parse('rl'),
          startsOn: times.startsOn ?? new Date(Date.now() - 60_000),
          expiresOn: times.expiresOn ?? new Date(Date.now() + 3_600_000),
        },
        credential,
      ).toString(),
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
};

/** For a test file: azurite started before its tests and stopped after them. */
export const useAzurite = (options: () => AzuriteOptions = () => ({})): { readonly current: Azurite } => {
  let running: Azurite | undefined;
  beforeAll(async () => {
    running = await startAzurite(options());
  }, 60_000);
  afterAll(async () => {
    await running?.close();
  });
  return {
    get current(): Azurite {
      if (running === undefined) throw new Error('useAzurite: azurite runs only while the file runs');
      return running;
    },
  };
};

/** A forwarding proxy in front of one server that can answer a status instead, or cut the bodies of GET responses. */
export interface FaultProxy extends RunningHttpServer {
  /** The next `times` requests whose path ends with `suffix` are answered `status` (an XML error body) instead. */
  fail(suffix: string, status: number, times?: number): void;
  /**
   * The next `times` GETs whose path ends with `suffix` send `afterBytes` bytes of their body, then drop; `onCut`
   * runs (and is awaited) between the bytes and the drop. With `stall`, the connection stays open instead, silent.
   */
  cut(
    suffix: string,
    afterBytes: number,
    options?: { times?: number; onCut?: () => Promise<void>; stall?: boolean },
  ): void;
  /** Every request's method, path and Range header (`x-ms-range` or `range`), in arrival order. */
  readonly requests: ReadonlyArray<{
    readonly method: string;
    readonly path: string;
    readonly range?: string;
  }>;
}

/** Starts a proxy on 127.0.0.1 that forwards every request to `target` (`http://host:port`) as it is. */
export const startFaultProxy = async (target: string): Promise<FaultProxy> => {
  interface Cut {
    readonly suffix: string;
    readonly afterBytes: number;
    remaining: number;
    readonly onCut?: () => Promise<void>;
    readonly stall?: boolean;
  }
  const cuts: Cut[] = [];
  const requests: Array<{ method: string; path: string; range?: string }> = [];
  const failures: Array<{ suffix: string; status: number; remaining: number }> = [];
  const to = new URL(target);
  const server = await startHttpServer((incoming, outgoing) => {
    const method = incoming.method ?? 'GET';
    const pathname = new URL(incoming.url ?? '/', 'http://proxy').pathname;
    const range = incoming.headers['x-ms-range'] ?? incoming.headers.range;
    requests.push({ method, path: pathname, ...(typeof range === 'string' ? { range } : {}) });
    const failure = failures.find((f) => f.remaining > 0 && pathname.endsWith(f.suffix));
    if (failure !== undefined) {
      failure.remaining -= 1;
      const body = `<?xml version="1.0" encoding="utf-8"?><Error><Code>ServerBusy</Code><Message>Injected ${failure.status}.</Message></Error>`;
      outgoing.writeHead(failure.status, { 'content-type': 'application/xml' }).end(body);
      return;
    }
    const cut =
      method === 'GET' ? cuts.find((c) => c.remaining > 0 && pathname.endsWith(c.suffix)) : undefined;
    if (cut !== undefined) cut.remaining -= 1;
    const upstream = httpRequest(
      { host: to.hostname, port: to.port, method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        if (cut === undefined || (answer.statusCode ?? 500) >= 300) {
          answer.pipe(outgoing);
          return;
        }
        let sent = 0;
        answer.on('data', (chunk: Buffer) => {
          const room = cut.afterBytes - sent;
          if (room <= 0) return;
          sent += chunk.length;
          outgoing.write(chunk.subarray(0, room), () => {
            if (sent >= cut.afterBytes && cut.stall !== true)
              void (cut.onCut?.() ?? Promise.resolve()).finally(() => outgoing.destroy());
          });
        });
        // A body shorter than the cut ends as it is; a cut one is dropped, never ended.
        answer.on('end', () => {
          if (sent < cut.afterBytes) outgoing.end();
        });
      },
    );
    upstream.on('error', () => outgoing.destroy());
    // A client gone before the answer ended: the upstream's answer is dropped (left piped to a closed response, it
    // stays paused, its socket open and the jest worker alive after azurite is gone).
    let answered = false;
    upstream.once('response', (answer) => answer.once('end', () => (answered = true)));
    outgoing.once('close', () => answered || upstream.destroy());
    incoming.pipe(upstream);
  });
  return {
    ...server,
    requests,
    fail: (suffix, status, times = 1) => void failures.push({ suffix, status, remaining: times }),
    cut: (suffix, afterBytes, { times = 1, ...rest } = {}) =>
      void cuts.push({ suffix, afterBytes, remaining: times, ...rest }),
  };
};

/** A self-signed certificate for 127.0.0.1 (openssl), as PEM files in `dir`, and the certificate's text. */
export const selfSignedCertificate = async (
  dir: string,
): Promise<{ readonly certFile: string; readonly keyFile: string; readonly pem: string }> => {
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  const openssl = spawn(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'],
      ...['-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile],
    ],
    { stdio: 'ignore' },
  );
  const code = await new Promise<number | null>((resolve) => openssl.once('exit', resolve));
  if (code !== 0) throw new Error(`openssl exited with ${code}`);
  return { certFile, keyFile, pem: readFileSync(certFile, 'utf8') };
};
