/** parseArgs in process: flags, env vars and defaults to an AppConfig, and every way it says no. */
import { defaultAppConfig, flagList, flagTable, switchWords } from '../../src/core/flags/app-config';
import { packageVersion } from '../../src/command/package-version';
import { redact } from '../../src/core/redact';
import { configOf, parse, usageLines } from '../helpers/parse-args';

describe('parseArgs', () => {
  it('gives the defaults of the flag table when nothing is set', () => {
    expect(configOf([])).toEqual(defaultAppConfig);
    expect(defaultAppConfig).toEqual({
      configDir: '/mnt/configs',
      modelDir: '/mnt/models',
      serverUrl: 'http://127.0.0.1:8080',
      protocol: 'v2',
      serverKind: 'auto',
      downloadConcurrency: 4,
      loadConcurrency: 2,
      logLevel: 'info',
      logFormat: 'auto',
      watchPollMs: 0,
      source: 'dir',
      configmapKey: 'models.json',
      watchTimeoutS: 300,
      maxConfigBytes: 33_554_432,
      requestTimeoutMs: 30_000,
      maxModelBytes: 256 * 2 ** 30,
      maxArchiveRatio: 200,
      maxArchiveEntries: 10_000,
      maxModelFiles: 10_000,
      minDownloadRate: 1024,
      minRateWindowMs: 60_000,
      localStorageRoots: ['/mnt/pvc'],
      pvcMountRoot: '/mnt/pvc',
      localModelFiles: 'copy',
      storageConcurrency: 8,
      downloadStreams: 8,
      maxDownloadStreams: 32,
      s3Addressing: 'auto',
      s3Anonymous: false,
      progressIntervalMs: 10_000,
      loadTimeoutMs: 300_000,
      serverWaitTimeout: 300_000,
      retryBaseMs: 500,
      retryMaxMs: 30_000,
      maxAttempts: 8,
      resyncInterval: 60_000,
      maxUnlistedUnloads: 100,
      minFreeBytes: 0,
      linkSameContent: false,
      nodeCacheMaxBytes: 0,
      nodeCacheMinFreeBytes: 0,
      shutdownTimeout: 20_000,
      httpPort: 9081,
      kubeEvents: 'auto',
      watchStallMs: 60_000,
      httpMaxConnections: 64,
      enablePuller: false,
      proxyTimeout: 300_000,
      proxyBodyTimeout: 20_000,
      proxyBodyMinRate: 1024,
      proxyMaxConnections: 1024,
      dryRun: false,
      once: false,
    });
  });

  it('decodes every flag given on the command line', () => {
    const config = configOf([
      ...[
        '--config-dir',
        '/c',
        '--model-dir',
        '/m',
        '--server-url',
        'http://ts:8081/',
        '--protocol',
        'torchserve',
        '--server-kind',
        'triton',
      ],
      ...['--download-concurrency', '8', '--load-concurrency', '3', '--log-level', 'debug'],
      ...['--watch-poll-ms', '250', '--request-timeout-ms', '1000', '--load-timeout-ms', '2000'],
      ...['--server-wait-timeout', '90s'],
      ...['--source', 'kube-api', '--configmap', 'models', '--namespace', 'serving'],
      ...['--configmap-key', 'list.json', '--watch-timeout-s', '60'],
      ...['--max-model-bytes', '40Gi', '--max-archive-ratio', '50', '--max-archive-entries', '500'],
      ...['--max-model-files', '2000'],
      ...['--min-download-rate', '64Ki', '--min-rate-window-ms', '5000'],
      ...['--local-storage-roots', '/mnt/pvc, /data/models/'],
      ...['--pvc-mount-root', '/data/claim/'],
      ...['--local-model-files', 'link'],
      ...['--storage-concurrency', '16', '--s3-endpoint', 'http://minio:9000', '--s3-region', 'eu-west-1'],
      ...['--s3-addressing', 'virtual', '--s3-anonymous'],
      ...['--max-config-bytes', '4096'],
      ...['--ca-bundle', '/ca.pem', '--progress-interval-ms', '5000'],
      ...['--node-cache-dir', '/var/cache/modelsync/'],
      ...['--node-cache-max-bytes', '10Gi', '--node-cache-min-free-bytes', '1Gi'],
      ...[
        '--retry-base-ms',
        '10',
        '--retry-max-ms',
        '10',
        '--max-attempts',
        '1',
        '--torchserve-token-file',
        '/k',
      ],
      ...[
        '--log-format',
        'json',
        '--resync-interval',
        '30s',
        '--min-free-bytes',
        '1Gi',
        '--link-same-content',
      ],
      ...['--max-unlisted-unloads', '7'],
      ...['--download-streams', '4', '--max-download-streams', '16'],
      ...['--shutdown-timeout', '5s'],
      ...['--http-port', '0', '--http-host', '127.0.0.1', '--watch-stall-ms', '5000'],
      ...['--http-max-connections', '8', '--kube-events', 'off'],
      ...[
        '--enable-puller',
        '--probe-period',
        '1m30s',
        '--proxy-timeout',
        '2m',
        '--proxy-body-timeout',
        '5s',
        '--proxy-body-min-rate',
        '4Ki',
        '--proxy-max-connections',
        '99',
      ],
      ...['--dry-run', '--once'],
    ]);
    expect(config).toEqual({
      configDir: '/c',
      modelDir: '/m',
      serverUrl: 'http://ts:8081',
      protocol: 'torchserve',
      serverKind: 'triton',
      downloadConcurrency: 8,
      loadConcurrency: 3,
      logLevel: 'debug',
      watchPollMs: 250,
      source: 'kube-api',
      configmap: 'models',
      namespace: 'serving',
      configmapKey: 'list.json',
      watchTimeoutS: 60,
      maxConfigBytes: 4096,
      requestTimeoutMs: 1000,
      maxModelBytes: 40 * 2 ** 30,
      maxArchiveRatio: 50,
      maxArchiveEntries: 500,
      maxModelFiles: 2000,
      minDownloadRate: 64 * 1024,
      minRateWindowMs: 5000,
      localStorageRoots: ['/mnt/pvc', '/data/models'],
      pvcMountRoot: '/data/claim',
      localModelFiles: 'link',
      storageConcurrency: 16,
      downloadStreams: 4,
      maxDownloadStreams: 16,
      s3Endpoint: 'http://minio:9000',
      s3Region: 'eu-west-1',
      s3Addressing: 'virtual',
      s3Anonymous: true,
      caBundle: '/ca.pem',
      nodeCacheDir: '/var/cache/modelsync',
      nodeCacheMaxBytes: 10 * 2 ** 30,
      nodeCacheMinFreeBytes: 2 ** 30,
      progressIntervalMs: 5000,
      loadTimeoutMs: 2000,
      serverWaitTimeout: 90_000,
      retryBaseMs: 10,
      retryMaxMs: 10,
      maxAttempts: 1,
      torchserveTokenFile: '/k',
      logFormat: 'json',
      resyncInterval: 30_000,
      maxUnlistedUnloads: 7,
      minFreeBytes: 2 ** 30,
      linkSameContent: true,
      shutdownTimeout: 5000,
      httpPort: 0,
      httpHost: '127.0.0.1',
      watchStallMs: 5000,
      httpMaxConnections: 8,
      kubeEvents: 'off',
      enablePuller: true,
      probePeriod: '1m30s',
      proxyTimeout: 120_000,
      proxyBodyTimeout: 5000,
      proxyBodyMinRate: 4096,
      proxyMaxConnections: 99,
      dryRun: true,
      once: true,
    });
  });

  it('takes a value from its env var, and a flag over its env var', () => {
    const env = {
      MODELSYNC_CONFIG_DIR: '/from-env',
      MODELSYNC_WATCH_TIMEOUT_S: '200',
      MODELSYNC_DRY_RUN: 'yes',
    };
    expect(configOf([], env)).toMatchObject({ configDir: '/from-env', watchTimeoutS: 200, dryRun: true });
    expect(configOf(['--config-dir', '/from-flag'], env)).toMatchObject({
      configDir: '/from-flag',
      watchTimeoutS: 200,
    });
  });

  it.each([
    ...switchWords.on.map((word) => [word, true] as const),
    ...switchWords.off.map((word) => [word, false] as const),
    [' TRUE ', true] as const,
    ['Off', false] as const,
  ])('reads the switch env var value %j as %s', (word, on) => {
    expect(configOf([], { MODELSYNC_DRY_RUN: word }).dryRun).toBe(on);
  });

  it('reads the env, never process.env', () => {
    process.env['MODELSYNC_WATCH_TIMEOUT_S'] = 'not a number';
    try {
      expect(configOf([]).watchTimeoutS).toBe(300);
    } finally {
      delete process.env['MODELSYNC_WATCH_TIMEOUT_S'];
    }
  });

  it('names the flag, quotes the value and gives the codec message for a bad value', () => {
    expect(usageLines(['--watch-timeout-s', '0'])).toEqual([
      'modelsync: invalid --watch-timeout-s: expected a whole number from 1 to 3600, got "0"',
    ]);
    expect(usageLines(['--server-url', 'ftp://host'])).toEqual([
      'modelsync: invalid --server-url: expected an http(s) URL such as http://127.0.0.1:8080, with no user:password in it, got "ftp://host"',
    ]);
    expect(usageLines(['--protocol', 'grpc'])).toEqual([
      'modelsync: invalid --protocol: expected one of v2, torchserve, got "grpc"',
    ]);
  });

  it('refuses a URL flag holding user:password at start (every call would refuse it, retried for ever), never showing it', () => {
    for (const url of ['http://user:secret@127.0.0.1:8080', 'https://secret@minio:9000']) {
      for (const flag of ['--server-url', '--s3-endpoint']) {
        const lines = usageLines([flag, url]);
        expect(lines).toEqual([
          expect.stringContaining(`modelsync: invalid ${flag}: expected an http(s) URL`),
        ]);
        expect(lines[0]).toContain('user:password');
        // As the CLI writes it: through the redaction of every line on stderr.
        expect(redact(lines.join('\n'))).not.toContain('secret');
      }
    }
    expect(configOf(['--server-url', 'http://127.0.0.1:8080/']).serverUrl).toBe('http://127.0.0.1:8080');
  });

  it('takes an IP address or a host name for --http-host, and refuses anything else', () => {
    for (const host of ['0.0.0.0', '127.0.0.1', '::', '::1', 'fe80::1', 'localhost', 'pod-1.ns.svc'])
      expect(configOf(['--http-host', host]).httpHost).toBe(host);
    expect(usageLines(['--http-host', 'http://0.0.0.0'])).toEqual([
      'modelsync: invalid --http-host: expected an IP address or a host name, got "http://0.0.0.0"',
    ]);
  });

  it('reads byte counts with or without a suffix, and local roots as a list (empty: none)', () => {
    expect(configOf(['--max-model-bytes', '1500']).maxModelBytes).toBe(1500);
    expect(configOf(['--max-model-bytes', '1.5Ki']).maxModelBytes).toBe(1536);
    expect(configOf(['--max-model-bytes', '2G']).maxModelBytes).toBe(2e9);
    expect(configOf([], { MODELSYNC_MIN_DOWNLOAD_RATE: '0' }).minDownloadRate).toBe(0);
    expect(configOf([], { MODELSYNC_LOCAL_STORAGE_ROOTS: '' }).localStorageRoots).toEqual([]);
    expect(configOf(['--local-storage-roots', '/']).localStorageRoots).toEqual(['/']);
    expect(usageLines(['--max-model-bytes', '0.5', '--local-storage-roots', '/mnt/pvc,models'])).toEqual([
      'modelsync: invalid --max-model-bytes: expected a number of bytes from 1 to 9007199254740991 ' +
        '(suffixes Ki, Mi, Gi, Ti, k, M, G, T), got "0.5"',
      'modelsync: invalid --local-storage-roots: expected comma-separated absolute paths, got "models"',
    ]);
  });

  it('reads the pvc mount root as one absolute path, its trailing slashes dropped', () => {
    expect(configOf([], { MODELSYNC_PVC_MOUNT_ROOT: '/data/claim//' }).pvcMountRoot).toBe('/data/claim');
    expect(configOf(['--pvc-mount-root', '/']).pvcMountRoot).toBe('/');
    expect(usageLines(['--pvc-mount-root', 'mnt/pvc'])).toEqual([
      'modelsync: invalid --pvc-mount-root: expected an absolute path, got "mnt/pvc"',
    ]);
  });

  it('names the env var when the bad value came from one, one line per bad setting', () => {
    expect(
      usageLines([], { MODELSYNC_LOG_LEVEL: 'loud', MODELSYNC_MODEL_DIR: '', MODELSYNC_ONCE: 'maybe' }),
    ).toEqual([
      'modelsync: invalid MODELSYNC_ONCE: expected one of true, 1, yes, on, false, 0, no, off or nothing, got "maybe"',
      'modelsync: invalid MODELSYNC_MODEL_DIR: must not be empty',
      'modelsync: invalid MODELSYNC_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ]);
  });

  it('rejects an unknown flag with one line and a pointer to --help, not the help', () => {
    const parsed = parse(['--no-such-flag']);
    expect(parsed).toEqual({
      _tag: 'UsageError',
      exitCode: 2,
      message: "modelsync: unknown option '--no-such-flag'\nTry 'modelsync --help' for the flags.\n",
    });
  });

  // `--link-same-content true` (a YAML args list's habit) left "true" as an argument: two such made the process the
  // storage initializer, downloading "true" into "true"; one, a usage error about <uri> <dest> pairs.
  it('refuses a value given to a switch, naming the switch, never reading it as a storage initializer argument', () => {
    const takesNone = (flag: string, got: string): string =>
      `modelsync: ${flag} takes no value: give it alone to turn it on, or leave it out (got ${got})`;
    expect(usageLines(['--link-same-content', 'true', '--s3-anonymous', 'false'])).toEqual([
      takesNone('--link-same-content', '"true" after it'),
      takesNone('--s3-anonymous', '"false" after it'),
    ]);
    expect(usageLines(['--once', 'yes'])).toEqual([takesNone('--once', '"yes" after it')]);
    expect(usageLines(['--dry-run=false', '--once=true'])).toEqual([
      takesNone('--dry-run', '"--dry-run=false"'),
      takesNone('--once', '"--once=true"'),
    ]);
    // A switch before a real pair is the storage initializer's, as before.
    expect(parse(['--s3-anonymous', 's3://models/iris', '/mnt/models'])).toMatchObject({
      _tag: 'Initialize',
      config: { s3Anonymous: true },
      pairs: [{ uri: 's3://models/iris', dest: '/mnt/models' }],
    });
  });

  // `--component-port 9081 --port 9081` proxied every request to itself: a storm of connections until the port was
  // full, and the model server never found.
  it('refuses a model server at its own HTTP port on this host, naming both settings', () => {
    expect(usageLines(['--component-port', '9081'])).toEqual([
      'modelsync: --component-port (9081) is the port modelsync itself serves (--http-port, KServe: --port): it would send every call to the model server back to itself',
    ]);
    expect(usageLines(['--server-url', 'http://localhost:9090/'], { MODELSYNC_HTTP_PORT: '9090' })).toEqual([
      'modelsync: --server-url (http://localhost:9090) is the port modelsync itself serves (--http-port, KServe: --port): it would send every call to the model server back to itself',
    ]);
    expect(configOf(['--component-port', '8080', '--port', '9081']).serverUrl).toBe('http://127.0.0.1:8080');
    expect(configOf(['--server-url', 'http://10.0.0.5:9081']).serverUrl).toBe('http://10.0.0.5:9081');
    expect(configOf(['--server-url', 'http://127.0.0.1:9081', '--http-port', '0']).httpPort).toBe(0);
    expect(configOf(['--server-url', 'http://127.0.0.1:9081', '--http-host', '10.0.0.5']).httpPort).toBe(
      9081,
    );
  });

  it('rejects a missing value and a stray argument', () => {
    expect(usageLines(['--watch-timeout-s'])).toEqual([
      "modelsync: option '--watch-timeout-s <s>' argument missing",
    ]);
    expect(usageLines(['models.json'])).toHaveLength(1);
  });

  it('takes --once alone (the one-shot sync) and with --dry-run, however each was set', () => {
    expect(configOf(['--once'])).toMatchObject({ once: true, dryRun: false });
    expect(configOf([], { MODELSYNC_ONCE: '1' })).toMatchObject({ once: true, dryRun: false });
    expect(configOf(['--once'], { MODELSYNC_DRY_RUN: 'true' })).toMatchObject({ once: true, dryRun: true });
  });

  it('takes --source kube-api with its ConfigMap, and refuses it without one or with a name Kubernetes refuses', () => {
    expect(
      configOf(['--source', 'kube-api', '--configmap', 'models', '--namespace', 'serving']),
    ).toMatchObject({
      source: 'kube-api',
      configmap: 'models',
      namespace: 'serving',
      configmapKey: 'models.json',
    });
    expect(configOf([], { MODELSYNC_SOURCE: 'kube-api', MODELSYNC_CONFIGMAP: 'a.b-c' }).configmap).toBe(
      'a.b-c',
    );
    expect(usageLines(['--source', 'kube-api'])).toEqual([
      'modelsync: --source kube-api needs --configmap: the ConfigMap to watch',
    ]);
    expect(usageLines([], { MODELSYNC_SOURCE: 'kube-api' })[0]).toContain(
      'MODELSYNC_SOURCE kube-api needs --configmap',
    );
    for (const bad of ['Models', 'models,other', '-models', 'a'.repeat(254), '']) {
      expect(usageLines(['--source', 'kube-api', '--configmap', bad])[0]).toMatch(
        /^modelsync: invalid --configmap: /,
      );
    }
    expect(usageLines(['--namespace', 'a.b'])[0]).toMatch(
      /^modelsync: invalid --namespace: expected a Kubernetes name/,
    );
    expect(usageLines(['--source', 'informer'])[0]).toContain('expected one of dir, kube-api');
  });

  it('reads durations with a unit (or 0) and refuses a bare number or an unknown unit', () => {
    expect(configOf(['--resync-interval', '5m', '--shutdown-timeout', '1500ms'])).toMatchObject({
      resyncInterval: 300_000,
      shutdownTimeout: 1500,
    });
    expect(configOf(['--resync-interval', '0']).resyncInterval).toBe(0);
    expect(configOf([], { MODELSYNC_SHUTDOWN_TIMEOUT: '1h' }).shutdownTimeout).toBe(3_600_000);
    expect(usageLines(['--resync-interval', '60'])).toEqual([
      'modelsync: invalid --resync-interval: expected a duration from 0 ms to 86400 s such as 1500ms, 20s, 5m or 1h, got "60"',
    ]);
    expect(usageLines([], { MODELSYNC_SHUTDOWN_TIMEOUT: '2d' })[0]).toContain(
      'invalid MODELSYNC_SHUTDOWN_TIMEOUT',
    );
  });

  it('takes a log format from the choices only', () => {
    expect(configOf(['--log-format', 'pretty']).logFormat).toBe('pretty');
    expect(usageLines(['--log-format', 'yaml'])[0]).toContain('expected one of auto, pretty, json');
  });

  it('refuses a retry base above the retry cap, and takes one equal to it', () => {
    expect(usageLines(['--retry-base-ms', '40000'])).toEqual([
      'modelsync: --retry-base-ms (40000) is above --retry-max-ms (30000); the first retry delay cannot exceed the cap',
    ]);
    expect(usageLines([], { MODELSYNC_RETRY_MAX_MS: '100' })[0]).toContain(
      'above MODELSYNC_RETRY_MAX_MS (100)',
    );
    expect(configOf(['--retry-base-ms', '100', '--retry-max-ms', '100']).retryBaseMs).toBe(100);
  });

  // The model server shares the model dir: a node cache in it was one more model to it (and writable by it), and
  // the next start removed it with whatever else no config lists (found by a probe).
  it('refuses a node cache dir that is the model dir or inside it, and takes one beside it', () => {
    for (const cache of ['/mnt/models', '/mnt/models/', '/mnt/models/.cache', '/mnt//models/x/../cache'])
      expect(usageLines(['--node-cache-dir', cache])).toEqual([
        expect.stringMatching(/^modelsync: --node-cache-dir \(\/.*\) is in --model-dir \(\/mnt\/models\)/),
      ]);
    expect(
      usageLines(['--model-dir', '/var/cache/m'], { MODELSYNC_NODE_CACHE_DIR: '/var/cache/m/n' })[0],
    ).toContain('MODELSYNC_NODE_CACHE_DIR (/var/cache/m/n) is in --model-dir (/var/cache/m)');
    expect(configOf(['--node-cache-dir', '/mnt/models-cache']).nodeCacheDir).toBe('/mnt/models-cache');
    expect(configOf(['--node-cache-dir', '/var/cache/modelsync']).nodeCacheDir).toBe('/var/cache/modelsync');
  });

  it('prints the version of package.json for --version and -V', () => {
    expect(packageVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(parse(['--version'])).toEqual({ _tag: 'Version', text: `${packageVersion}\n` });
    expect(parse(['-V'])).toEqual({ _tag: 'Version', text: `${packageVersion}\n` });
  });

  it('prints the help for --help and -h', () => {
    const help = parse(['--help']);
    expect(help._tag).toBe('Help');
    expect(parse(['-h'])).toEqual(help);
  });

  it('maps each flag to the AppConfig field of the same name', () => {
    for (const [field, spec] of flagList) {
      const camel = spec.flag.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
      expect(camel).toBe(field);
      expect(spec.env).toBe(`MODELSYNC_${spec.flag.slice(2).replaceAll('-', '_').toUpperCase()}`);
    }
    expect(Object.keys(flagTable)).toHaveLength(flagList.length);
  });
});

describe('parseArgs and the removed flags', () => {
  it('refuses a removed flag, naming it, but not a word after `--`, which is no flag', () => {
    expect(usageLines(['--settle-ms', '5'])[0]).toMatch(/^modelsync: --settle-ms was removed: /);
    // After `--` every word is an argument (a storage initializer's `<uri> <dest>`): it was refused as the flag.
    const parsed = parse(['--', '--settle-ms', '/tmp/dest']);
    expect(parsed).toMatchObject({
      _tag: 'Initialize',
      pairs: [{ uri: '--settle-ms', dest: '/tmp/dest' }],
    });
  });
});
