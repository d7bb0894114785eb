/**
 * kubeCall: where a request goes; kubeFailureOf: what a failed list, watch or Event write says, whichever error it
 * failed with.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { describeKubeFailure } from '../../src/core/config-map';
import { kubeCall, kubeFailureOf, KubeStatusError } from '../../src/config-source/kube-request';
import { startHttpServer } from '../../src/testing/http-server';
import { fakeClient } from '../helpers/kube-call';
import { serverTls } from '../helpers/tls';

describe('kubeCall', () => {
  it.each([
    ['a trailing slash', '/', ''],
    [
      'a path prefix (a proxy such as Rancher) and a trailing slash',
      '/k8s/clusters/c-1/',
      '/k8s/clusters/c-1',
    ],
  ])(
    'joins a server URL with %s to the path as kubectl does (the API server answers 404 to //api)',
    async (_what, suffix, prefix) => {
      const paths: string[] = [];
      const server = await startHttpServer((request, response) => {
        paths.push(request.url ?? '');
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
      try {
        const config = {
          getCurrentCluster: () => ({ server: server.url + suffix }),
          applySecurityAuthentication: () => Promise.resolve(),
          getCurrentUser: () => null,
        } as unknown as KubeConfig;
        const path = '/api/v1/namespaces/serving/configmaps';
        const answer = await kubeCall(fakeClient, config, path, { limit: 1 }, new AbortController().signal);
        await answer.body?.cancel();
        expect(paths).toEqual([`${prefix}${path}?limit=1`]);
      } finally {
        await server.close();
      }
    },
  );
});

describe('kubeCall while credentials are got', () => {
  it('gives up at its deadline while the credentials are still being got (an exec plugin that hangs)', async () => {
    const config = {
      getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
      applySecurityAuthentication: () => new Promise<void>(() => undefined),
      getCurrentUser: () => null,
    } as unknown as KubeConfig;
    const controller = new AbortController();
    const call = kubeCall(fakeClient, config, '/api/v1/namespaces/serving/events', {}, controller.signal);
    controller.abort(new Error('no answer within 10 s'));
    await expect(call).rejects.toThrow('no answer within 10 s');
  });
});

const said = (cause: unknown): string => describeKubeFailure(kubeFailureOf(cause));

/** What a GET of `path` from the API server at `server` (no credentials of the config's) failed with. */
const refusalOf = (client: typeof fakeClient, server: string, path: string): Promise<unknown> => {
  const config = {
    getCurrentCluster: () => ({ server }),
    applySecurityAuthentication: () => Promise.resolve(),
    getCurrentUser: () => null,
  } as unknown as KubeConfig;
  return kubeCall(client, config, path, {}, new AbortController().signal).catch((error: unknown) => error);
};

describe('kubeCall refused for what the request holds', () => {
  it("says the API server's own reason for a 422 (an Event it will not take), cut short, not just the status", async () => {
    const message = `Event "p.1" is invalid: involvedObject.namespace: Invalid value: "a": does not match event.namespace${'!'.repeat(5000)}`;
    const server = await startHttpServer((_request, response) => {
      response
        .writeHead(422, { 'content-type': 'application/json' })
        .end(JSON.stringify({ kind: 'Status', status: 'Failure', message, reason: 'Invalid', code: 422 }));
    });
    try {
      const refusal = await refusalOf(fakeClient, server.url, '/api/v1/namespaces/b/events');
      const reason = said(refusal);
      expect(reason).toMatch(
        /^the API server answered HTTP 422: Event "p.1" is invalid: involvedObject.namespace: Invalid value: "a": does not match event.namespace!+$/,
      );
      expect(reason.length).toBeLessThan(300);
    } finally {
      await server.close();
    }
  });
});

describe('kubeCall refused by a server that quotes the credential back', () => {
  it('says the Status message and the reason phrase without the bearer token it was sent', async () => {
    const token = 'sekret-token-ABCDEF123456';
    const server = await startHttpServer((request, response) => {
      const sent = (request.headers.authorization ?? '').replace(/^Bearer /, '');
      response.statusMessage = `denied ${sent}`;
      response
        .writeHead(500, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ kind: 'Status', message: `admission webhook denied request with token ${sent}` }),
        );
    });
    try {
      const withToken = {
        ...fakeClient,
        RequestContext: class {
          getHeaders = (): Record<string, string> => ({ Authorization: `Bearer ${token}` });
          getDispatcher = (): undefined => undefined;
        },
      } as unknown as typeof fakeClient;
      const refusal = await refusalOf(withToken, server.url, '/api/v1/namespaces/b/configmaps');
      const reason = said(refusal);
      expect(reason).toContain('admission webhook denied request with token [REDACTED]');
      expect(`${reason} ${(refusal as Error).message}`).not.toContain(token);
    } finally {
      await server.close();
    }
  });
});

describe('kubeFailureOf', () => {
  it('takes the status, and whom the server refused, from a KubeStatusError', () => {
    const refused = new KubeStatusError('Forbidden', {
      status: 403,
      anonymous: false,
      user: 'system:serviceaccount:serving:agent',
    });
    expect(kubeFailureOf(refused)).toEqual({
      status: 403,
      anonymous: false,
      user: 'system:serviceaccount:serving:agent',
    });
    expect(said(new KubeStatusError('Unauthorized', { status: 401, anonymous: true }))).toMatch(/credential/);
  });

  it('says a file read before the request (a token file gone) by its message, not as a network error', () => {
    const gone = Object.assign(new Error("ENOENT: no such file or directory, stat '/sa/token'"), {
      code: 'ENOENT',
    });
    expect(said(gone)).toBe("the request failed: ENOENT: no such file or directory, stat '/sa/token'");
  });

  it('says a network error by its code when fetch wraps it in "fetch failed", as it does every one', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    expect(said(new TypeError('fetch failed', { cause: refused }))).toBe(
      'cannot reach the API server (ECONNREFUSED)',
    );
  });

  it("says a silent watch's timeout in words, not as the DOMException's numeric code taken for a status", () => {
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    expect(said(timeout)).toBe('the request failed: The operation was aborted due to timeout');
  });
});

describe('kubeCall failing its TLS handshake', () => {
  it("names the API server and says its certificate was refused, pointing at the kubeconfig's CA, not 'cannot reach'", async () => {
    // Signed by the test CA, which the client was not given (as a kubeconfig with the wrong certificate-authority).
    const server = await startHttpServer((_request, response) => void response.end('{}'), {
      tls: serverTls(),
    });
    try {
      const refusal = await refusalOf(fakeClient, server.url, '/api/v1/namespaces/b/configmaps');
      expect(describeKubeFailure(kubeFailureOf(refusal), server.url)).toBe(
        `the API server at 127.0.0.1:${server.port} presented a certificate that was refused ` +
          '(UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate): check the certificate-authority ' +
          "or certificate-authority-data of the kubeconfig's cluster, or in a pod the service account's ca.crt",
      );
    } finally {
      await server.close();
    }
  });

  it('names the API server and says the handshake failed, in words, for a plain-HTTP port', async () => {
    const server = await startHttpServer((_request, response) => void response.end('{}'));
    try {
      const https = server.url.replace('http:', 'https:');
      const refusal = await refusalOf(fakeClient, https, '/api/v1/namespaces/b/configmaps');
      expect(describeKubeFailure(kubeFailureOf(refusal), https)).toBe(
        `the TLS handshake with the API server at 127.0.0.1:${server.port} failed (ERR_SSL_WRONG_VERSION_NUMBER: ` +
          'TLS handshake failed: wrong version number (the server did not answer in TLS: plain HTTP on an https:// port?))',
      );
    } finally {
      await server.close();
    }
  });
});
