/**
 * The kubeconfig user on the real process (`dist/cli.js`) against the API-server stand-in, which checks the bearer
 * token and answers a request without one as a real API server does (403 for `system:anonymous`): kubectl's
 * `tokenFile` sends the token, read anew at each request; a user that sends nothing is told apart from a Role that
 * refuses; what modelsync does not support is refused before anything is sent.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from '../../src/testing/wait';
import { killAllCli } from '../helpers/cli-process';
import { goodToken } from '../helpers/kube-api';
import type { LogLine } from '../helpers/log-sink';
import { useKubeAgent } from '../helpers/kube-agent';
import { useTempDir } from '../helpers/temp-dir';

jest.setTimeout(60_000);
afterEach(killAllCli);
const tmp = useTempDir('kube-api-credentials');
const kube = useKubeAgent(tmp);

const failure = 'ConfigMap list or watch failed; retrying';
const loadedLine = (model: string) => (log: LogLine) =>
  log['msg'] === 'model loaded' && log['model'] === model;

describe('the kubeconfig user of --source kube-api', () => {
  it("sends the token of kubectl's tokenFile (a path relative to the kubeconfig), read anew at each request", async () => {
    const { agent, cluster, server } = await kube.start({
      names: ['alpha', 'beta'],
      initial: ['alpha'],
      user: () => ({ tokenFile: 'token' }),
    });
    await agent.waitForLog(loadedLine('alpha'), 10_000);
    await waitFor(() => cluster.api.openWatches() === 1, 5000, 'an open watch');
    expect(cluster.api.requests.map((r) => r.status)).toEqual([200, 200]);
    // A rotation: the next request (the watch re-opened) carries the new token.
    const rotated = 'rotated-token-61c0d9a4';
    await cluster.writeToken(rotated);
    cluster.api.setToken(rotated);
    const since = cluster.api.requests.length;
    cluster.api.dropWatches('end');
    await waitFor(() => cluster.api.openWatches() === 1, 10_000, 'the watch open again');
    expect(cluster.api.requests.slice(since).at(-1)).toMatchObject({ kind: 'watch', status: 200 });
    cluster.api.apply(kube.models('alpha', 'beta'));
    await agent.waitForLog(loadedLine('beta'), 10_000);
    expect(agent.logs.filter((log) => log['msg'] === failure)).toEqual([]);
    expect(agent.stderr.text + agent.stdout.text).not.toContain(rotated);
    expect(server.loaded.has('beta')).toBe(true);
  });

  it('says no credentials were sent when the API server answers 403 as system:anonymous, not that the Role refused', async () => {
    const { agent, cluster } = await kube.start({ initial: ['alpha'], user: () => ({}) });
    const refused = await agent.waitForLog(failure, 10_000);
    expect(cluster.api.requests[0]).toMatchObject({ kind: 'list', status: 403 });
    expect(refused['reason']).toMatch(
      /^no credentials were sent \(the API server answered 403 Forbidden to an anonymous request\): check the kubeconfig user's token, tokenFile or client certificate/,
    );
    expect(refused['reason']).not.toMatch(/the Role must allow/);
  });

  it.each([
    [
      'a misspelt token file key',
      { token_file: 'token' },
      /kubeconfig user modelsync holds no credential modelsync reads \(it has "token_file"\)/,
    ],
    [
      'an auth provider',
      { 'auth-provider': { name: 'gcp', config: {} } },
      /kubeconfig user modelsync: auth-provider: auth providers are not supported/,
    ],
    [
      'basic authentication',
      { username: 'admin', password: 'hunter2-secret' },
      /kubeconfig user modelsync: username: basic authentication is not supported/,
    ],
  ])('refuses %s clearly, sending nothing', async (_what, user, reason) => {
    const { agent, cluster } = await kube.start({ initial: ['alpha'], user: () => user });
    const refused = await agent.waitForLog(failure, 10_000);
    expect(refused['reason']).toMatch(reason);
    expect(cluster.api.requests).toEqual([]);
    expect(agent.stderr.text + agent.stdout.text).not.toContain('hunter2-secret');
    expect(agent.stderr.text + agent.stdout.text).not.toContain(goodToken);
  });

  it('refuses a context naming a user no kubeconfig file has, as kubectl does, sending nothing', async () => {
    const { agent, cluster } = await kube.start({
      initial: ['alpha'],
      context: { contextUser: 'modelsnyc' },
    });
    const refused = await agent.waitForLog(failure, 10_000);
    expect(refused['reason']).toContain(
      'the context test names the user modelsnyc, which no kubeconfig file has',
    );
    expect(cluster.api.requests).toEqual([]);
  });

  it('refuses a current-context naming no context, as kubectl does, sending nothing', async () => {
    const { agent, cluster } = await kube.start({ initial: ['alpha'], context: { currentContext: 'tset' } });
    const refused = await agent.waitForLog(failure, 10_000);
    expect(refused['reason']).toContain('the current-context tset is no context of the kubeconfig');
    expect(cluster.api.requests).toEqual([]);
  });

  it('refuses a kubeconfig whose YAML aliases expand past any kubeconfig, naming it, without holding the process', async () => {
    // 500 bytes that expand to 387 million strings ("billion laughs"): serialising them held the event loop 30 s per
    // attempt and ended in "Invalid string length" (one level less: hundreds of MB, then the heap limit).
    const laughs = join(tmp.path, 'laughs-kubeconfig');
    let yaml = 'apiVersion: v1\nkind: Config\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n';
    for (let level = 1; level < 9; level++)
      yaml += `l${level}: &l${level} [${Array(9)
        .fill(`*l${level - 1}`)
        .join(', ')}]\n`;
    await writeFile(laughs, `${yaml}users:\n- name: other\n  user:\n    extensions: *l8\n`);
    const { agent } = await kube.start({ initial: ['alpha'], moreKubeconfigs: [laughs] });
    const refused = await agent.waitForLog(failure, 10_000);
    expect(refused['reason']).toContain(`the kubeconfig ${laughs} expands to more than`);
  });

  it.each([
    ['a token', 'token: opaque-kubeconfig-token-4f2a9c', 'opaque-kubeconfig-token'],
    [
      "a client key's data",
      'client-key-data: LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUJsYWJsYQ==',
      'LS0tLS1CRUdJTiBFQyBQUklW',
    ],
  ])(
    'names the file and the place of a kubeconfig with %s that is no YAML, never quoting the lines around it',
    async (_what, credentials, secret) => {
      // js-yaml's message quotes the lines around the error: the user's credentials, logged at each retry.
      const broken = join(tmp.path, 'broken-kubeconfig');
      const lines = ['apiVersion: v1', 'kind: Config', 'users:', '- name: other', '  user:'];
      await writeFile(broken, [...lines, `    ${credentials}`, '    extensions: {x: [1, 2}', ''].join('\n'));
      const { agent } = await kube.start({ initial: ['alpha'], moreKubeconfigs: [broken] });
      const refused = await agent.waitForLog(failure, 10_000);
      expect(refused['reason']).toMatch(
        new RegExp(`the kubeconfig ${broken} is no valid YAML: .+ \\(line 7, column \\d+\\)$`),
      );
      expect(agent.stderr.text + agent.stdout.text).not.toContain(secret);
    },
  );

  it('merges KUBECONFIG files as kubectl does: a name the first file has is taken from it, not refused as a duplicate', async () => {
    // A second file with the same cluster, user and context names, pointing elsewhere with another token.
    const second = join(tmp.path, 'second-kubeconfig');
    await writeFile(
      second,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'stand-in', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'modelsync', user: { token: 'stale-token-of-another-cluster' } }],
        contexts: [
          { name: 'test', context: { cluster: 'stand-in', user: 'modelsync', namespace: 'elsewhere' } },
        ],
        'current-context': 'test',
      }),
    );
    const { agent, cluster } = await kube.start({ initial: ['alpha'], moreKubeconfigs: [second] });
    await agent.waitForLog(loadedLine('alpha'), 10_000);
    expect(cluster.api.requests[0]).toMatchObject({ kind: 'list', status: 200 });
    expect(agent.logs.filter((log) => log['msg'] === failure)).toEqual([]);
  });

  it('skips a KUBECONFIG file that does not exist, as kubectl does', async () => {
    const missing = join(tmp.path, 'no-such-kubeconfig');
    const { agent } = await kube.start({ initial: ['alpha'], moreKubeconfigs: [missing] });
    await agent.waitForLog(loadedLine('alpha'), 10_000);
    expect(agent.logs.filter((log) => log['msg'] === failure)).toEqual([]);
  });

  it("runs an exec plugin named by a relative path from the kubeconfig's dir, as kubectl does", async () => {
    const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' };
    const plugin = join(tmp.path, 'bin', 'exec-plugin');
    await mkdir(join(tmp.path, 'bin'));
    await writeFile(
      plugin,
      `#!/bin/sh\necho '${JSON.stringify({ ...credential, status: { token: goodToken } })}'\n`,
      { mode: 0o755 },
    );
    const exec = {
      apiVersion: credential.apiVersion,
      command: './bin/exec-plugin',
      interactiveMode: 'Never',
    };
    const { agent, cluster } = await kube.start({ initial: ['alpha'], user: () => ({ exec }) });
    await agent.waitForLog(loadedLine('alpha'), 10_000);
    expect(cluster.api.requests[0]).toMatchObject({ kind: 'list', status: 200 });
    expect(agent.logs.filter((log) => log['msg'] === failure)).toEqual([]);
  });

  /** An exec plugin at `<tmp>/bin/<name>` running `script` (sh), and the kubeconfig user naming it. */
  const execUser = async (name: string, script: string) => {
    await mkdir(join(tmp.path, 'bin'), { recursive: true });
    await writeFile(join(tmp.path, 'bin', name), `#!/bin/sh\n${script}\n`, { mode: 0o755 });
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: `./bin/${name}`,
      interactiveMode: 'Never',
    };
    return () => ({ exec });
  };

  it('runs an exec plugin with no stdin, as client-go runs one that is not interactive: one that reads it is not held', async () => {
    const credential = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' };
    // The client's ExecAuth gave the plugin an open pipe it never closed: `cat` waited for good, and so did the list.
    const user = await execUser(
      'reads-stdin',
      `cat > /dev/null\necho '${JSON.stringify({ ...credential, status: { token: goodToken } })}'`,
    );
    const { agent } = await kube.start({ initial: ['alpha'], user });
    await agent.waitForLog(loadedLine('alpha'), 10_000);
  });

  it('says in one line which exec plugin failed and how, and retries it', async () => {
    const user = await execUser('refuses', 'echo "error: the SSO session has expired" >&2\nexit 4');
    const { agent } = await kube.start({ initial: ['alpha'], user });
    await agent.waitForLog(failure, 10_000);
    const second = await agent.waitForLog((log) => log['msg'] === failure && log['attempt'] === 2, 10_000);
    expect(second['reason']).toBe(
      `the request failed: the exec plugin ${join(tmp.path, 'bin', 'refuses')} of kubeconfig user modelsync exited with code 4: error: the SSO session has expired`,
    );
  });
});
