/** The CLI as a contract: the built `dist/cli.js` run as a child process on real, kubelet-style config dirs. */
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { waitFor, withTimeout } from '../../src/testing/wait';
import { agentNodeFlags } from '../../src/command/node-flags';
import {
  cliPath,
  killAllCli,
  runCli,
  startCli,
  type CliProcess,
  type StreamOutput,
} from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import { atLeast, atLevel } from '../helpers/log-sink';
import { useTempDir } from '../helpers/temp-dir';
import { helpBlocks, helpFlags } from '../helpers/help-blocks';

/**
 * Every flag of the CLI with the env var that sets it, in the order `--help` lists them (by topic): adding a flag
 * without an env var fails the help test.
 */
const flagEnvVars: ReadonlyArray<readonly [string, string]> = [
  ['--config-dir', 'MODELSYNC_CONFIG_DIR'],
  ['--source', 'MODELSYNC_SOURCE'],
  ['--configmap', 'MODELSYNC_CONFIGMAP'],
  ['--namespace', 'MODELSYNC_NAMESPACE'],
  ['--configmap-key', 'MODELSYNC_CONFIGMAP_KEY'],
  ['--model-dir', 'MODELSYNC_MODEL_DIR'],
  ['--min-free-bytes', 'MODELSYNC_MIN_FREE_BYTES'],
  ['--link-same-content', 'MODELSYNC_LINK_SAME_CONTENT'],
  ['--node-cache-dir', 'MODELSYNC_NODE_CACHE_DIR'],
  ['--node-cache-max-bytes', 'MODELSYNC_NODE_CACHE_MAX_BYTES'],
  ['--node-cache-min-free-bytes', 'MODELSYNC_NODE_CACHE_MIN_FREE_BYTES'],
  ['--server-url', 'MODELSYNC_SERVER_URL'],
  ['--protocol', 'MODELSYNC_PROTOCOL'],
  ['--server-kind', 'MODELSYNC_SERVER_KIND'],
  ['--torchserve-token-file', 'MODELSYNC_TORCHSERVE_TOKEN_FILE'],
  ['--server-wait-timeout', 'MODELSYNC_SERVER_WAIT_TIMEOUT'],
  ['--download-concurrency', 'MODELSYNC_DOWNLOAD_CONCURRENCY'],
  ['--load-concurrency', 'MODELSYNC_LOAD_CONCURRENCY'],
  ['--resync-interval', 'MODELSYNC_RESYNC_INTERVAL'],
  ['--shutdown-timeout', 'MODELSYNC_SHUTDOWN_TIMEOUT'],
  ['--local-storage-roots', 'MODELSYNC_LOCAL_STORAGE_ROOTS'],
  ['--pvc-mount-root', 'MODELSYNC_PVC_MOUNT_ROOT'],
  ['--local-model-files', 'MODELSYNC_LOCAL_MODEL_FILES'],
  ['--max-model-bytes', 'MODELSYNC_MAX_MODEL_BYTES'],
  ['--ca-bundle', 'MODELSYNC_CA_BUNDLE'],
  ['--s3-endpoint', 'MODELSYNC_S3_ENDPOINT'],
  ['--s3-region', 'MODELSYNC_S3_REGION'],
  ['--s3-addressing', 'MODELSYNC_S3_ADDRESSING'],
  ['--s3-anonymous', 'MODELSYNC_S3_ANONYMOUS'],
  ['--azure-blob-endpoint', 'MODELSYNC_AZURE_BLOB_ENDPOINT'],
  ['--gcs-endpoint', 'MODELSYNC_GCS_ENDPOINT'],
  ['--http-port', 'MODELSYNC_HTTP_PORT'],
  ['--http-host', 'MODELSYNC_HTTP_HOST'],
  ['--kube-events', 'MODELSYNC_KUBE_EVENTS'],
  ['--enable-puller', 'MODELSYNC_ENABLE_PULLER'],
  ['--component-port', 'MODELSYNC_COMPONENT_PORT'],
  ['--port', 'MODELSYNC_PORT'],
  ['--workers', 'MODELSYNC_WORKERS'],
  ['--probe-period', 'MODELSYNC_PROBE_PERIOD'],
  ['--proxy-timeout', 'MODELSYNC_PROXY_TIMEOUT'],
  ['--dry-run', 'MODELSYNC_DRY_RUN'],
  ['--once', 'MODELSYNC_ONCE'],
  ['--log-level', 'MODELSYNC_LOG_LEVEL'],
  ['--log-format', 'MODELSYNC_LOG_FORMAT'],
];

/** The tuning knobs, in the order `--help advanced` lists them. */
const advancedFlagEnvVars: ReadonlyArray<readonly [string, string]> = [
  ['--watch-poll-ms', 'MODELSYNC_WATCH_POLL_MS'],
  ['--watch-timeout-s', 'MODELSYNC_WATCH_TIMEOUT_S'],
  ['--max-config-bytes', 'MODELSYNC_MAX_CONFIG_BYTES'],
  ['--request-timeout-ms', 'MODELSYNC_REQUEST_TIMEOUT_MS'],
  ['--load-timeout-ms', 'MODELSYNC_LOAD_TIMEOUT_MS'],
  ['--retry-base-ms', 'MODELSYNC_RETRY_BASE_MS'],
  ['--retry-max-ms', 'MODELSYNC_RETRY_MAX_MS'],
  ['--max-attempts', 'MODELSYNC_MAX_ATTEMPTS'],
  ['--max-unlisted-unloads', 'MODELSYNC_MAX_UNLISTED_UNLOADS'],
  ['--max-archive-ratio', 'MODELSYNC_MAX_ARCHIVE_RATIO'],
  ['--max-archive-entries', 'MODELSYNC_MAX_ARCHIVE_ENTRIES'],
  ['--max-model-files', 'MODELSYNC_MAX_MODEL_FILES'],
  ['--min-download-rate', 'MODELSYNC_MIN_DOWNLOAD_RATE'],
  ['--min-rate-window-ms', 'MODELSYNC_MIN_RATE_WINDOW_MS'],
  ['--storage-concurrency', 'MODELSYNC_STORAGE_CONCURRENCY'],
  ['--download-streams', 'MODELSYNC_DOWNLOAD_STREAMS'],
  ['--max-download-streams', 'MODELSYNC_MAX_DOWNLOAD_STREAMS'],
  ['--progress-interval-ms', 'MODELSYNC_PROGRESS_INTERVAL_MS'],
  ['--watch-stall-ms', 'MODELSYNC_WATCH_STALL_MS'],
  ['--http-max-connections', 'MODELSYNC_HTTP_MAX_CONNECTIONS'],
  ['--proxy-body-timeout', 'MODELSYNC_PROXY_BODY_TIMEOUT'],
  ['--proxy-body-min-rate', 'MODELSYNC_PROXY_BODY_MIN_RATE'],
  ['--proxy-max-connections', 'MODELSYNC_PROXY_MAX_CONNECTIONS'],
];

const m1 = { storageUri: 's3://b/m1', framework: 'sklearn', memory: '1Gi' };
const m2 = { storageUri: 's3://b/m2', framework: 'onnx' };
const m2v2 = { storageUri: 's3://b/m2-v2', framework: 'onnx' };
const m3 = { storageUri: 's3://b/m3' };

/** The exact line `--dry-run` prints for an Add (KServe's field names, in this order). */
const addLine = (modelName: string, modelSpec: object, onStartup: boolean): string =>
  JSON.stringify({ op: 'Add', modelName, modelSpec, onStartup });
const removeLine = (modelName: string): string => JSON.stringify({ op: 'Remove', modelName });

/** Parses every non-empty line as JSON; fails the test on a line that is not a JSON object (pino writes one per line). */
const jsonLines = (output: StreamOutput): Array<Record<string, unknown>> =>
  output.lines
    .filter((line) => line !== '')
    .map((line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
      expect(parsed).toEqual(expect.any(Object));
      return parsed as Record<string, unknown>;
    });

afterEach(killAllCli);
// Declared after killAllCli: the dir goes once no process writes in it any more.
const tmp = useTempDir('cli');

/** A kubelet-managed ConfigMap dir holding models.json with `text`. */
const configMap = (text: string, name = 'configs'): string => {
  const dir = join(tmp.path, name);
  atomicWrite(dir, { 'models.json': text });
  return dir;
};

describe('modelsync --help', () => {
  it.each([
    [[], flagEnvVars],
    [['advanced'], advancedFlagEnvVars],
  ] as const)(
    '%j lists each flag of its topics with its MODELSYNC_* env var and exits 0',
    async (topic, flags) => {
      const result = await runCli(['--help', ...topic]);
      expect(result.code).toBe(0);
      const blocks = helpBlocks(result.stdout.text);
      const listed = helpFlags(blocks);
      expect(listed.filter((flag) => flag !== '-h' && flag !== '-V')).toEqual(flags.map(([flag]) => flag));
      for (const [flag, envVar] of flags) {
        const block = blocks.find((b) => b.startsWith(`${flag} `));
        expect(block).toContain(`env: ${envVar})`);
      }
    },
  );

  it('refuses a removed flag in one line naming it, and exits 2', async () => {
    const result = await runCli(['--dry-run', '--once', '--settle-ms', '100']);
    expect(result.code).toBe(2);
    expect(result.stderr.lines[0]).toMatch(/^modelsync: --settle-ms was removed: /);
  });
});

describe('modelsync on an older Node.js', () => {
  it('says in one line which Node.js it needs and exits 2 (not a TypeError and its stack)', async () => {
    const { engines } = JSON.parse(await readFile(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    // Node 20, as the process sees it: the check must come before anything Node 20 lacks is loaded.
    const olderNode = join(tmp.path, 'node-20.js');
    await writeFile(
      olderNode,
      "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.20.2' } });\n",
    );

    const result = await runCli(['--help'], { nodeFlags: ['--require', olderNode] });

    expect(result.code).toBe(2);
    expect(result.stdout.text).toBe('');
    expect(result.stderr.lines).toEqual([
      `modelsync needs Node.js ${engines.node.replace('>=', '')} or later; this is Node.js 20.20.2 (${process.execPath})`,
    ]);
  });
});

describe('modelsync --version', () => {
  it("prints package.json's version and exits 0", async () => {
    const { version } = JSON.parse(await readFile(join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    const result = await runCli(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.text).toBe(`${version}\n`);
  });

  it("runs as the npm bin runs it (the file itself, no node in front), with the image's Node.js flags", async () => {
    const shebang = (await readFile(cliPath, 'utf8')).split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${agentNodeFlags.join(' ')}`);
    const cli = startCli(['--version'], { asBin: true });
    expect(await cli.exited).toEqual({ code: 0, signal: null });
    expect(cli.stdout.text).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});

describe('modelsync --dry-run --once', () => {
  it('prints exactly one JSON line per op on stdout, sorted by model name, and exits 0', async () => {
    const dir = configMap(modelsJson({ m3, m1, m2 }));
    const result = await runCli(['--config-dir', dir, '--dry-run', '--once']);
    expect(result.code).toBe(0);
    expect(result.stdout.text).toBe(
      [addLine('m1', m1, true), addLine('m2', m2, true), addLine('m3', m3, true)]
        .map((l) => `${l}\n`)
        .join(''),
    );
    // The only warnings: models whose scheme (s3) this build may not serve yet.
    const warnings = jsonLines(result.stderr).filter(atLeast('warn'));
    expect(warnings.map((line) => line['msg'])).toEqual(
      warnings.map(() => 'no storage provider serves s3://; the model will fail'),
    );
  });

  it('warns on stderr about a model whose storage scheme no provider serves, and still prints its Add', async () => {
    const hdfs = { storageUri: 'hdfs://namenode/m4?token=s3cr3t', framework: 'onnx' };
    const result = await runCli(['--config-dir', configMap(modelsJson({ m4: hdfs })), '--dry-run', '--once']);
    expect(result.code).toBe(0);
    expect(result.stdout.lines).toHaveLength(1);
    const warnings = jsonLines(result.stderr).filter(atLevel('warn'));
    expect(warnings).toEqual([
      expect.objectContaining({
        model: 'm4',
        scheme: 'hdfs',
        storageUri: 'hdfs://namenode/m4',
        msg: 'no storage provider serves hdfs://; the model will fail',
      }),
    ]);
    expect(result.stderr.text).not.toContain('s3cr3t');
  });

  it('prints storage URIs without their user info or query string (stdout often lands in CI logs)', async () => {
    const signed =
      'https://bucket.example.com/m1.tgz?X-Amz-Signature=0123456789abcdef&X-Amz-Credential=AKIA1234';
    // A space in the path: the text's URL shape stops there, and the query after it showed whole.
    const spaced = 'https://models.example.com/my models/m3.bin?X-Custom-Token=c0ffee-t0ken-value';
    const dir = configMap(
      modelsJson({ m1: signed, m2: 'https://user:hunter2secret@models.example.com/m2', m3: spaced }),
    );
    const result = await runCli(['--config-dir', dir, '--dry-run', '--once']);
    expect(result.code).toBe(0);
    const uris = result.stdout.lines.map(
      (text) => (JSON.parse(text) as { modelSpec: { storageUri: string } }).modelSpec.storageUri,
    );
    expect(uris).toEqual([
      'https://bucket.example.com/m1.tgz',
      'https://models.example.com/m2',
      'https://models.example.com/my models/m3.bin',
    ]);
    expect(result.stdout.text).not.toMatch(/0123456789abcdef|AKIA1234|hunter2secret|c0ffee-t0ken-value/);
  });

  it('prints nothing and exits 0 for an empty model list', async () => {
    const result = await runCli(['--config-dir', configMap('[]'), '--dry-run', '--once']);
    expect(result.code).toBe(0);
    expect(result.stdout.text).toBe('');
  });

  // stdout to a pipe is written asynchronously: exiting as soon as the last line is queued would lose lines.
  it('prints every line before exiting when a slow reader lets the output back up', async () => {
    const names = Array.from({ length: 5000 }, (_, i) => `model-${String(i).padStart(4, '0')}`);
    const spec = { storageUri: 's3://bucket/a/fairly/long/path/to/the/model', framework: 'onnx' };
    const dir = configMap(modelsJson(Object.fromEntries(names.map((n) => [n, spec]))));
    const cli = startCli(['--config-dir', dir, '--dry-run', '--once']);
    const stdout = cli.child.stdout;
    stdout.pause();
    await waitFor(() => stdout.readableLength > 0 || cli.child.exitCode !== null, 10_000, 'output to start');
    // Up to a second for the CLI to exit early, which would lose what it had not written yet.
    await withTimeout(once(cli.child, 'exit'), 1000, 'an early exit').catch(() => undefined);
    stdout.resume();
    expect((await cli.exited).code).toBe(0);
    expect(cli.stdout.lines.filter((l) => l !== '')).toEqual(names.map((n) => addLine(n, spec, true)));
  });

  /** Runs `--dry-run --once` on `dir`, expecting exit 1, no stdout and one JSON line naming models.json; returns it. */
  const oneErrorLine = async (dir: string): Promise<Record<string, unknown>> => {
    const result = await runCli(['--config-dir', dir, '--dry-run', '--once']);
    expect(result.code).toBe(1);
    expect(result.stdout.text).toBe('');
    const lines = jsonLines(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]!['file']).toBe(join(dir, 'models.json'));
    return lines[0]!;
  };

  it('exits 1 with one JSON error line naming the file and the field when models.json is invalid', async () => {
    const dir = configMap(modelsJson({ m1, bad: { storageUri: 's3://b/bad', memory: 'lots' } }));
    const line = await oneErrorLine(dir);
    expect(line['level']).toBe('error');
    expect(line['msg']).toContain(join(dir, 'models.json'));
    expect(line['msg']).toContain('[1].modelSpec.memory');
  });

  it('exits 1 with one JSON error line naming the file when models.json is not JSON', async () => {
    const line = await oneErrorLine(configMap('[{"modelName": "m1",'));
    expect(line['msg']).toContain('not valid JSON');
  });

  it('exits 1 with one JSON error line when the config dir does not exist', async () => {
    await oneErrorLine(join(tmp.path, 'missing'));
  });

  it.each([
    ['a CA bundle that does not exist', ['--ca-bundle', '/nonexistent/ca.pem'], {}, 'CA bundle'],
    ['a proxy it cannot use (socks5)', [], { HTTPS_PROXY: 'socks5://proxy.example:1080' }, 'HTTPS_PROXY'],
    ['malformed download headers', [], { 'models.example.com-headers': '{"Authorization":' }, '-headers'],
    [
      'a readiness probe it cannot read',
      ['--component-port', '8080'],
      { SERVING_READINESS_PROBE: '{' },
      'SERVING_READINESS_PROBE',
    ],
  ])(
    'exits 2, as a real start does, with %s',
    async (_what, flags: string[], env: Record<string, string>, named: string) => {
      const dir = configMap(modelsJson({ m1 }));

      const result = await runCli(['--config-dir', dir, '--dry-run', '--once', ...flags], { env });

      expect(result.code).toBe(2);
      expect(result.stdout.text).toBe('');
      const lines = jsonLines(result.stderr).filter(atLeast('error'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 'error', msg: 'cannot start: the settings are invalid' });
      expect(lines[0]!['reason']).toContain(named);
      // The real start refuses the same.
      const real = await runCli(['--config-dir', dir, '--once', ...flags], { env });
      expect(real.code).toBe(2);
    },
  );
});

describe('modelsync flag validation', () => {
  it.each([
    [['--watch-timeout-s', 'abc'], 'abc'],
    [['--watch-timeout-s', '0'], '0'],
    [['--max-attempts', '1.5'], '1.5'],
    [['--server-url', 'ftp://host'], 'ftp://host'],
    [['--protocol', 'grpc'], 'grpc'],
    [['--log-level', 'loud'], 'loud'],
  ])('exits non-zero with an error quoting the bad value for %j', async (flagAndValue, value) => {
    const result = await runCli(['--config-dir', configMap('[]'), '--dry-run', '--once', ...flagAndValue]);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stdout.text).toBe('');
    expect(result.stderr.text).toContain(value);
  });

  it.each([['--protocol', 'grpc'] as const, ['--log-level', 'loud'] as const])(
    'names %s in the error for a value outside its choices',
    async (flag, value) => {
      const result = await runCli(['--dry-run', '--once', flag, value]);
      expect(result.code).not.toBe(0);
      expect(result.stderr.text).toContain(flag);
    },
  );

  it.each([['--watch-timeout-s', 'abc'] as const, ['--max-attempts', '1.5'] as const])(
    'names %s in the error for a value it cannot decode, and exits 2',
    async (flag, value) => {
      const result = await runCli(['--config-dir', configMap('[]'), '--dry-run', '--once', flag, value]);
      expect(result.code).toBe(2);
      expect(result.stderr.text).toContain(`invalid ${flag}: expected a whole number`);
    },
  );

  it('names the env var in the error when the bad value came from one', async () => {
    const result = await runCli(['--config-dir', configMap('[]'), '--dry-run', '--once'], {
      env: { MODELSYNC_WATCH_TIMEOUT_S: 'soon' },
    });
    expect(result.code).toBe(2);
    expect(result.stderr.text).toContain('invalid MODELSYNC_WATCH_TIMEOUT_S');
  });

  it('exits 2 on a usage error, keeping 1 for an invalid models.json', async () => {
    expect((await runCli(['--dry-run', '--once', '--no-such-flag'])).code).toBe(2);
    expect((await runCli(['--dry-run', '--once', '--protocol', 'grpc'])).code).toBe(2);
  });

  it('refuses a boolean env var that is neither true nor false', async () => {
    const result = await runCli(['--config-dir', configMap('[]')], { env: { MODELSYNC_DRY_RUN: 'maybe' } });
    expect(result.code).toBe(2);
    expect(result.stderr.text).toContain('MODELSYNC_DRY_RUN');
  });

  it('rejects an unknown flag, naming it', async () => {
    const result = await runCli(['--dry-run', '--once', '--no-such-flag']);
    expect(result.code).not.toBe(0);
    expect(result.stdout.text).toBe('');
    expect(result.stderr.text).toContain('--no-such-flag');
  });

  it('answers an unknown flag with one error line and a pointer to --help, not the whole help', async () => {
    const result = await runCli(['--no-such-flag']);
    expect(result.code).toBe(2);
    expect(result.stderr.text).toBe(
      "modelsync: unknown option '--no-such-flag'\nTry 'modelsync --help' for the flags.\n",
    );
  });

  it('refuses a retry base above the retry cap with exit code 2', async () => {
    const result = await runCli(['--dry-run', '--once', '--retry-base-ms', '2000', '--retry-max-ms', '1000']);
    expect(result.code).toBe(2);
    expect(result.stderr.text).toContain('--retry-base-ms (2000) is above --retry-max-ms (1000)');
  });
});

describe('modelsync env vars', () => {
  it('takes the config dir, --dry-run and --once from MODELSYNC_* env vars', async () => {
    const dir = configMap(modelsJson({ m1, m2 }));
    const result = await runCli([], {
      env: {
        MODELSYNC_CONFIG_DIR: dir,
        MODELSYNC_DRY_RUN: 'true',
        MODELSYNC_ONCE: '1',
      },
    });
    expect(result.code).toBe(0);
    expect(result.stdout.text).toBe(`${addLine('m1', m1, true)}\n${addLine('m2', m2, true)}\n`);
  });

  it('lets a flag override its env var', async () => {
    const dir = configMap(modelsJson({ m1 }));
    const result = await runCli(['--config-dir', dir], {
      env: {
        MODELSYNC_CONFIG_DIR: join(tmp.path, 'missing'),
        MODELSYNC_DRY_RUN: 'true',
        MODELSYNC_ONCE: 'true',
      },
    });
    expect(result.code).toBe(0);
    expect(result.stdout.text).toBe(`${addLine('m1', m1, true)}\n`);
  });

  it('reads MODELSYNC_ONCE=false as false: it keeps watching until SIGTERM', async () => {
    const dir = configMap(modelsJson({ m1 }));
    const cli = startCli([], {
      env: {
        MODELSYNC_CONFIG_DIR: dir,
        MODELSYNC_DRY_RUN: 'true',
        MODELSYNC_ONCE: 'false',
      },
    });
    expect(await cli.waitForStdoutLines(1)).toEqual([addLine('m1', m1, true)]);
    const exit = await cli.signalAndWait('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('rejects a bad env var value', async () => {
    const result = await runCli([], {
      env: {
        MODELSYNC_CONFIG_DIR: configMap('[]'),
        MODELSYNC_DRY_RUN: 'true',
        MODELSYNC_ONCE: 'true',
        MODELSYNC_PROTOCOL: 'grpc',
      },
    });
    expect(result.code).not.toBe(0);
    expect(result.stdout.text).toBe('');
    expect(result.stderr.text).toContain('MODELSYNC_PROTOCOL');
  });
});

describe('modelsync --dry-run (live)', () => {
  /** Writes each payload once the lines of the previous one are out; returns all stdout lines so far. */
  const driveUpdates = async (
    cli: CliProcess,
    dir: string,
    updates: ReadonlyArray<{ readonly text: string; readonly lines: number }>,
  ): Promise<ReadonlyArray<string>> => {
    let expectedCount = cli.stdout.lines.length;
    for (const update of updates) {
      atomicWrite(dir, { 'models.json': update.text });
      expectedCount += update.lines;
      await cli.waitForStdoutLines(expectedCount);
    }
    return cli.stdout.lines;
  };

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'prints the ops of each kubelet update as it happens and exits 0 on %s',
    async (signal) => {
      const dir = configMap(modelsJson({ m1 }));
      const cli = startCli(['--config-dir', dir, '--dry-run']);
      expect(await cli.waitForStdoutLines(1)).toEqual([addLine('m1', m1, true)]);

      const lines = await driveUpdates(cli, dir, [
        { text: modelsJson({ m1, m2 }), lines: 1 },
        { text: modelsJson({ m2 }), lines: 1 },
        { text: modelsJson({ m2: m2v2, m3 }), lines: 2 },
      ]);
      expect(lines).toEqual([
        addLine('m1', m1, true),
        addLine('m2', m2, false),
        removeLine('m1'),
        addLine('m2', m2v2, false),
        addLine('m3', m3, false),
      ]);

      const exit = await cli.signalAndWait(signal);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(cli.stdout.text).toBe(lines.map((line) => `${line}\n`).join(''));
      const logs = jsonLines(cli.stderr);
      expect(logs.length).toBeGreaterThan(0);
      expect(logs.filter(atLeast('error'))).toEqual([]);
    },
  );

  it('keeps the previous models when an update is invalid, logging one JSON warning naming the file and field', async () => {
    const dir = configMap(modelsJson({ m1 }));
    const cli = startCli(['--config-dir', dir, '--dry-run']);
    await cli.waitForStdoutLines(1);

    atomicWrite(dir, { 'models.json': modelsJson({ m2: { storageUri: 's3://b/m2', memory: 'lots' } }) });
    const warning = await cli.waitForLog((log) => JSON.stringify(log).includes('modelSpec.memory'));
    expect(warning.level).toBe('warn');
    expect(warning['file']).toBe(join(dir, 'models.json'));

    // Diffed against the last good config: m1 stays, only m2 is new.
    await driveUpdates(cli, dir, [{ text: modelsJson({ m1, m2 }), lines: 1 }]);
    expect(cli.stdout.lines).toEqual([addLine('m1', m1, true), addLine('m2', m2, false)]);

    expect(await cli.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(cli.stdout.text).toBe(`${addLine('m1', m1, true)}\n${addLine('m2', m2, false)}\n`);
    expect(jsonLines(cli.stderr).filter((line) => String(line['msg']).includes('rejected'))).toHaveLength(1);
  });

  // `modelsync --dry-run | head -1`: once head had its line, the dry run logged "uncaught exception … the agent goes
  // on" and printed the next edits' ops into nothing, for good.
  it('exits 1 with one error line when its stdout reader goes away, never printing into nothing for good', async () => {
    const dir = configMap(modelsJson({ m1 }));
    const cli = startCli(['--config-dir', dir, '--dry-run']);
    await cli.waitForStdoutLines(1);
    cli.child.stdout.destroy();
    atomicWrite(dir, { 'models.json': modelsJson({ m1, m2 }) });
    const exit = await withTimeout(cli.exited, 30_000, 'the exit once stdout is gone');
    expect(exit).toEqual({ code: 1, signal: null });
    const errors = cli.logs.filter(atLeast('error'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      msg: 'stdout was closed by its reader; nothing more can be printed: exiting',
    });
  });

  it('exits 0 on SIGTERM while still waiting for a missing config dir', async () => {
    const cli = startCli(['--config-dir', join(tmp.path, 'not-yet'), '--dry-run']);
    await cli.waitForLog((log) => log.msg.includes('does not exist'));
    expect(await cli.signalAndWait('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(cli.stdout.text).toBe('');
    expect(jsonLines(cli.stderr).length).toBeGreaterThan(0);
  });
});
