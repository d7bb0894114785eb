/**
 * execAuthenticator on real plugins (sh scripts): no stdin, a deadline that kills the plugin and its children, its
 * output capped, one run at a time, its credential cached until it expires, each failure one line naming it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig, User } from '@kubernetes/client-node';
import {
  execAuthenticator,
  execProvider,
  forgetExecCredentials,
  withExecClusterInfo,
} from '../../src/config-source/kube-exec';
import { eventWriteFailure } from '../../src/config-source/kube-events-api';
import { failureOfCall } from '../helpers/kube-call';
import { startHttpServer } from '../../src/testing/http-server';
import { waitFor } from '../../src/testing/wait';
import { useTempDir } from '../helpers/temp-dir';

const tmp = useTempDir('kube-exec');

afterEach(forgetExecCredentials);

const apiVersion = 'client.authentication.k8s.io/v1';
const credential = (status: object): string => JSON.stringify({ apiVersion, kind: 'ExecCredential', status });

/** A kubeconfig user (as clientUser gives it) whose plugin runs `script` with sh, each run counted in `runs`. */
const pluginUser = async (script: string): Promise<User> => {
  const command = join(tmp.path, 'plugin');
  await writeFile(command, `#!/bin/sh\necho run >> ${join(tmp.path, 'runs')}\n${script}\n`, { mode: 0o755 });
  const plugin = { command, apiVersion, interactiveMode: 'Never' };
  return { name: 'ci', authProvider: { name: execProvider, config: { plugin, user: 'ci' } } };
};

const runs = async (): Promise<number> =>
  (await readFile(join(tmp.path, 'runs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const authorization = async (user: User, timeoutMs = 10_000): Promise<unknown> => {
  const opts: { headers?: Record<string, string> } = {};
  await execAuthenticator({ PATH: process.env['PATH'] }, timeoutMs).applyAuthentication(user, opts);
  return opts.headers?.['Authorization'];
};

describe('execAuthenticator', () => {
  it('gives the plugin no stdin: one that reads it to its end answers at once', async () => {
    const user = await pluginUser(`cat > /dev/null\necho '${credential({ token: 'tok-1' })}'`);
    expect(await authorization(user)).toBe('Bearer tok-1');
  });

  it('kills a plugin that hangs at its deadline, with the children holding its pipes, and says so in one line', async () => {
    const pids = join(tmp.path, 'pids');
    const user = await pluginUser(`sleep 600 &\necho $$ $! > ${pids}\nwait`);
    await expect(authorization(user, 2000)).rejects.toThrow(
      new Error(
        `the exec plugin ${join(tmp.path, 'plugin')} of kubeconfig user ci gave no credential within 2 s; it was killed`,
      ),
    );
    const [shell, sleep] = (await readFile(pids, 'utf8')).trim().split(' ').map(Number);
    await waitFor(() => !alive(shell!) && !alive(sleep!), 5000, 'the plugin and its child gone');
  });

  it('runs a plugin once for requests that need it at the same time: a hung plugin is one process, not one per request', async () => {
    const user = await pluginUser(`sleep 0.3\necho '${credential({ token: 'tok-2' })}'`);
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => authorization(user)));
    expect(answers).toEqual(Array(5).fill('Bearer tok-2'));
    expect(await runs()).toBe(1);
  });

  it('keeps the credential until its expirationTimestamp, then runs the plugin again', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const fresh = await pluginUser(`echo '${credential({ token: 'tok-3', expirationTimestamp: later })}'`);
    await authorization(fresh);
    await authorization(fresh);
    expect(await runs()).toBe(1);
    forgetExecCredentials();
    const past = new Date(Date.now() - 1000).toISOString();
    const expired = await pluginUser(`echo '${credential({ token: 'tok-4', expirationTimestamp: past })}'`);
    await authorization(expired);
    await authorization(expired);
    expect(await runs()).toBe(3);
  });

  it.each([
    [
      'exits non-zero',
      'echo "token expired,\n  run login" >&2\nexit 3',
      'exited with code 3: token expired, run login',
    ],
    ['writes no JSON', 'echo hello', 'wrote no JSON'],
    [
      'writes another apiVersion',
      `echo '{"apiVersion":"v9","kind":"ExecCredential","status":{"token":"t"}}'`,
      'wrote an ExecCredential of apiVersion "v9", not client.authentication.k8s.io/v1 as the kubeconfig asks',
    ],
    [
      'writes no credential',
      `echo '${credential({})}'`,
      'wrote neither a token nor a client certificate and key',
    ],
    [
      'writes a token with a space',
      `echo '${credential({ token: 'a b' })}'`,
      'wrote a token that holds whitespace (U+0020) at character 2 of the token',
    ],
    ['writes without end', 'yes', 'wrote more than 1048576 bytes; it was killed'],
  ])('fails, naming the plugin, when it %s', async (_, script, why) => {
    const user = await pluginUser(script);
    await expect(authorization(user)).rejects.toThrow(
      new Error(`the exec plugin ${join(tmp.path, 'plugin')} of kubeconfig user ci ${why}`),
    );
  });

  it('fails, naming the plugin and not quoting its arguments, when they hold what no command line can', async () => {
    const user = await pluginUser('');
    const plugin = { command: join(tmp.path, 'plugin'), args: ['--secret=s3cr3t\u0000'], apiVersion };
    const broken = { ...user, authProvider: { name: execProvider, config: { plugin, user: 'ci' } } } as User;
    const failure = await authorization(broken).catch((error: unknown) => error as Error);
    expect(failure).toEqual(
      new Error(
        `the exec plugin ${join(tmp.path, 'plugin')} of kubeconfig user ci could not be run (ERR_INVALID_ARG_VALUE)`,
      ),
    );
  });

  it('fails, naming the plugin, when it cannot be run', async () => {
    const user = await pluginUser('');
    const plugin = { command: join(tmp.path, 'missing'), apiVersion };
    const missing = { ...user, authProvider: { name: execProvider, config: { plugin, user: 'ci' } } } as User;
    await expect(authorization(missing)).rejects.toThrow(
      `the exec plugin ${join(tmp.path, 'missing')} of kubeconfig user ci could not be run (ENOENT)`,
    );
  });
});

describe('an exec credential the API server refuses', () => {
  /** An API server answering every request 401, and `user`'s kubeconfig for it, its plugin run by our authenticator. */
  const refusingServer = async (user: User) => {
    const server = await startHttpServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{}');
    });
    const authenticator = execAuthenticator({ PATH: process.env['PATH'] });
    const configOf = (who: User, authenticate: () => Promise<void>): KubeConfig =>
      ({
        getCurrentCluster: () => ({ server: server.url }),
        getCurrentUser: () => who,
        applySecurityAuthentication: authenticate,
      }) as unknown as KubeConfig;
    return {
      server,
      config: configOf(user, () => authenticator.applyAuthentication(user, {})),
      /** The same server for a user with a token of its own (no plugin). */
      tokenConfig: configOf({ name: 't', token: 'x' }, () => Promise.resolve()),
    };
  };

  it('is not kept: after a 401 the next request runs the plugin again (a revoked or rotated token)', async () => {
    const { server, config } = await refusingServer(
      await pluginUser(`echo '${credential({ token: 'tok-5' })}'`),
    );
    try {
      for (const _ of [1, 2])
        expect(String(await failureOfCall(config, '/api/v1/namespaces/serving/configmaps'))).toContain(
          'Unauthorized',
        );
      expect(await runs()).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('does not stop the Kubernetes Events for good: the next write gets a new credential from the plugin', async () => {
    const { server, config, tokenConfig } = await refusingServer(
      await pluginUser(`echo '${credential({ token: 'tok-8' })}'`),
    );
    try {
      expect(eventWriteFailure(await failureOfCall(config, '/api/v1/namespaces/serving/events'))).toEqual({
        reason: expect.stringContaining('401 Unauthorized') as unknown,
        refused: false,
      });
      const tokenRefusal = await failureOfCall(tokenConfig, '/api/v1/namespaces/serving/events');
      expect(eventWriteFailure(tokenRefusal).refused).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe('an exec plugin that must have a terminal', () => {
  it('is refused before it is run, naming the user and what to set, as client-go refuses it without a terminal', async () => {
    const user = await pluginUser(`echo '${credential({ token: 'tok-6' })}'`);
    const config = (user.authProvider as { config: { plugin: object } }).config;
    const always = {
      ...user,
      authProvider: {
        name: execProvider,
        config: { ...config, plugin: { ...config.plugin, interactiveMode: 'Always' } },
      },
    };
    await expect(authorization(always)).rejects.toThrow(
      "kubeconfig user ci: exec's interactiveMode is Always, which needs a terminal; modelsync runs its plugin without one (set IfAvailable or Never)",
    );
    expect(await runs()).toBe(0);
  });
});

describe('an exec plugin with provideClusterInfo', () => {
  it('gets the cluster in KUBERNETES_EXEC_INFO, as client-go gives it, and no cluster without it', async () => {
    const info = join(tmp.path, 'info');
    const user = await pluginUser(
      `echo "$KUBERNETES_EXEC_INFO" > ${info}\necho '${credential({ token: 'tok-7' })}'`,
    );
    const config = (user.authProvider as { config: { plugin: object } }).config;
    const asking = {
      ...user,
      authProvider: {
        name: execProvider,
        config: { ...config, plugin: { ...config.plugin, provideClusterInfo: true } },
      },
    };
    const kubeconfig = {
      users: [asking],
      getCurrentUser: () => kubeconfig.users[0],
      getCurrentCluster: () => ({
        name: 'c',
        server: 'https://api.example:6443',
        caData: 'Q0E=',
        tlsServerName: 'api',
        skipTLSVerify: false,
      }),
    } as unknown as KubeConfig;
    withExecClusterInfo(kubeconfig);
    expect(await authorization(kubeconfig.users[0]!)).toBe('Bearer tok-7');
    expect(JSON.parse(await readFile(info, 'utf8'))).toEqual({
      apiVersion,
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://api.example:6443',
          'certificate-authority-data': 'Q0E=',
          'tls-server-name': 'api',
          'insecure-skip-tls-verify': false,
        },
      },
    });
    forgetExecCredentials();
    await authorization(user);
    expect(JSON.parse(await readFile(info, 'utf8'))).toEqual({
      apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });
});
