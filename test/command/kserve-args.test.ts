/** KServe's agent and storage-initializer command lines, exactly as its pod webhook writes them, through parseArgs. */
import { configOf, parse, usageLines } from '../helpers/parse-args';

/** agent_injector.go's args for a multi-model InferenceService: the puller, then always the component port last. */
const pullerArgs = ['--enable-puller', '--config-dir', '/mnt/configs', '--model-dir', '/mnt/models'];
const batcherArgs = ['--enable-batcher', '--max-batchsize', '32', '--max-latency', '5000'];
const loggerArgs = [
  ...['--log-url', 'http://broker.ns/', '--source-uri', 'isvc-predictor-abc', '--log-mode', 'all'],
  ...[
    '--inference-service',
    'isvc',
    '--namespace',
    'ns',
    '--endpoint',
    'default',
    '--component',
    'predictor',
  ],
  ...['--logger-tls-skip-verify', 'false'],
];

describe("KServe's agent command line", () => {
  it('runs with the puller args as KServe writes them: the model server at the component port, the port 9081', () => {
    const config = configOf([...pullerArgs, '--component-port', '8085']);
    expect(config).toMatchObject({
      enablePuller: true,
      configDir: '/mnt/configs',
      modelDir: '/mnt/models',
      componentPort: 8085,
      serverUrl: 'http://127.0.0.1:8085',
      httpPort: 9081,
    });
  });

  it("takes pflag's --flag=value forms, and --enable-puller=true", () => {
    expect(
      configOf([
        '--enable-puller=true',
        '--config-dir=/c',
        '--model-dir=/m',
        '--component-port=8080',
        '--port=9082',
      ]),
    ).toMatchObject({
      enablePuller: true,
      configDir: '/c',
      modelDir: '/m',
      serverUrl: 'http://127.0.0.1:8080',
      httpPort: 9082,
    });
    expect(configOf(['--enable-puller=1', '--workers', '3', '--probe-period', '-1ns'])).toMatchObject({
      enablePuller: true,
      downloadConcurrency: 3,
      probePeriod: '-1ns',
    });
  });

  it('refuses --enable-puller=false and a probe period that is no Go duration, naming each', () => {
    expect(usageLines(['--enable-puller=false'])).toEqual([
      "modelsync: --enable-puller=false (KServe's agent without its puller) is not supported: modelsync always syncs the model list",
    ]);
    expect(usageLines(['--probe-period', '10'])[0]).toMatch(
      /^modelsync: invalid --probe-period: expected a Go duration/,
    );
  });

  it('refuses the batcher with exit 2 and a line naming it and what to change, never "unknown option"', () => {
    const lines = usageLines([...pullerArgs, ...batcherArgs, '--component-port', '8080']);
    expect(lines).toEqual([
      'modelsync: the KServe batcher (--enable-batcher) is not supported by modelsync: remove spec.predictor.batcher ' +
        "from the InferenceService, or keep KServe's agent image in the `agent` key of inferenceservice-config",
    ]);
  });

  it('refuses the payload logger once, whichever of its flags come, and both features together', () => {
    expect(usageLines([...loggerArgs, '--component-port', '8080'])).toEqual([
      expect.stringMatching(
        /^modelsync: the KServe payload logger \(--log-url\) is not supported by modelsync: remove spec\.predictor\.logger/,
      ),
    ]);
    expect(usageLines(['--metadata-headers=x-a', '--component-port', '8080'])[0]).toContain(
      'payload logger (--metadata-headers)',
    );
    const both = usageLines([...pullerArgs, ...batcherArgs, ...loggerArgs, '--component-port', '8080']);
    expect(both.map((line) => line.replace(/ is not supported.*/, ''))).toEqual([
      'modelsync: the KServe batcher (--enable-batcher)',
      'modelsync: the KServe payload logger (--log-url)',
    ]);
    expect(both.join('\n')).not.toMatch(/unknown option/);
  });

  it.each([
    '--log-marshaller-url=http://m:9083/marshal',
    '--log-marshaller-port=9083',
    '--log-batch-size=10',
    '--log-batch-interval=5s',
  ])('refuses the payload logger named by its KServe 0.19 flag %s alone, never "unknown option"', (flag) => {
    // The blob-storage logger's flags (cmd/agent/main.go since 0.19) were missing from the logger's list.
    expect(usageLines([flag, '--component-port', '8080'])).toEqual([
      expect.stringContaining(
        `the KServe payload logger (${flag.split('=')[0]}) is not supported by modelsync`,
      ),
    ]);
  });

  it('takes --enable-batcher=false as the batcher left off', () => {
    expect(configOf(['--enable-batcher=false', '--component-port', '8080']).serverUrl).toBe(
      'http://127.0.0.1:8080',
    );
  });

  it('refuses KServe spellings and ours that say different things, and a component port with no port to proxy from', () => {
    expect(usageLines(['--port', '9090', '--http-port', '9091'])).toEqual([
      'modelsync: --port and --http-port say different things: give one',
    ]);
    expect(configOf(['--port', '9090', '--http-port', '9090']).httpPort).toBe(9090);
    expect(usageLines(['--workers', '2', '--download-concurrency', '5'])).toEqual([
      'modelsync: --workers and --download-concurrency say different things: give one',
    ]);
    expect(usageLines([], { MODELSYNC_WORKERS: '2', MODELSYNC_DOWNLOAD_CONCURRENCY: '5' })).toEqual([
      'modelsync: MODELSYNC_WORKERS and MODELSYNC_DOWNLOAD_CONCURRENCY say different things: give one',
    ]);
    expect(usageLines(['--component-port', '8080', '--server-url', 'http://127.0.0.1:8080'])).toEqual([
      'modelsync: --component-port and --server-url both name the model server: give one',
    ]);
    expect(usageLines(['--component-port', '8080', '--port', '0'])).toEqual([
      'modelsync: --component-port needs the agent port to proxy from: --port 0 turns it off',
    ]);
  });

  it("lets KServe's flags win over our env vars, and ours over KServe's env vars, as every flag wins over an env var", () => {
    expect(configOf(['--port', '9090'], { MODELSYNC_HTTP_PORT: '9091' }).httpPort).toBe(9090);
    expect(configOf(['--http-port', '9091'], { MODELSYNC_PORT: '9090' }).httpPort).toBe(9091);
    expect(configOf(['--component-port', '8085'], { MODELSYNC_SERVER_URL: 'http://ts:8080' }).serverUrl).toBe(
      'http://127.0.0.1:8085',
    );
    expect(configOf(['--server-url', 'http://ts:8080'], { MODELSYNC_COMPONENT_PORT: '8085' }).serverUrl).toBe(
      'http://ts:8080',
    );
    // KServe's agent always serves its port: an env var's 0 (a harness's default) gives way to KServe's 9081.
    const parsed = parse(['--component-port', '8080'], { MODELSYNC_HTTP_PORT: '0' });
    expect(parsed).toMatchObject({ _tag: 'Run', config: { httpPort: 9081 } });
    expect(parsed._tag === 'Run' ? parsed.notes : []).toEqual([
      "--component-port serves KServe's agent port: 9081, not the 0 of MODELSYNC_HTTP_PORT",
    ]);
    expect(usageLines(['--component-port', '8080', '--http-port', '0'])).toEqual([
      'modelsync: --component-port needs the agent port to proxy from: --http-port 0 turns it off',
    ]);
  });

  it("takes queue-proxy's REVISION_TIMEOUT_SECONDS as the proxy timeout unless --proxy-timeout is given", () => {
    const env = { REVISION_TIMEOUT_SECONDS: '600' };
    expect(configOf(['--component-port', '8080'], env).proxyTimeout).toBe(600_000);
    expect(configOf(['--component-port', '8080', '--proxy-timeout', '30s'], env).proxyTimeout).toBe(30_000);
    expect(usageLines([], { REVISION_TIMEOUT_SECONDS: 'soon' })).toEqual([
      'modelsync: invalid REVISION_TIMEOUT_SECONDS: expected whole seconds from 1 to 86400, got "soon"',
    ]);
  });
});

describe("KServe's storage-initializer command line", () => {
  it('takes <uri> <dest> pairs, with our flags among them', () => {
    const parsed = parse(['s3://models/iris', '/mnt/models']);
    expect(parsed).toMatchObject({
      _tag: 'Initialize',
      pairs: [{ uri: 's3://models/iris', dest: '/mnt/models' }],
    });
    const several = parse([
      '--log-level',
      'debug',
      'gs://a/b',
      '/mnt/models/a',
      'https://h/m.tgz',
      '/mnt/models/b',
    ]);
    expect(several).toMatchObject({
      _tag: 'Initialize',
      config: { logLevel: 'debug' },
      pairs: [
        { uri: 'gs://a/b', dest: '/mnt/models/a' },
        { uri: 'https://h/m.tgz', dest: '/mnt/models/b' },
      ],
    });
  });

  it('refuses an odd number of arguments and the modes that do not apply, with exit 2', () => {
    expect(usageLines(['s3://models/iris'])).toEqual([
      'modelsync: the storage initializer takes <uri> <dest> pairs; got 1 argument',
    ]);
    expect(usageLines(['a', 'b', 'c'])).toEqual([
      'modelsync: the storage initializer takes <uri> <dest> pairs; got 3 arguments',
    ]);
    expect(usageLines(['--once', 's3://m/i', '/mnt/models'])).toEqual([
      'modelsync: --once does not apply to the storage initializer (<uri> <dest> arguments)',
    ]);
  });

  // An empty dest resolved to the working dir (/app in the image): the model's entries replaced modelsync's own there.
  it('refuses an empty dest, naming the pair, with exit 2', () => {
    expect(usageLines(['s3://models/iris', ''])).toEqual([
      'modelsync: the storage initializer needs a dest dir for each <uri>; pair 1 (s3://models/iris) has none',
    ]);
    expect(usageLines(['gs://a/b', '/mnt/models/a', 'https://u:pw@h/m.tgz?sig=x', ' '])).toEqual([
      'modelsync: the storage initializer needs a dest dir for each <uri>; pair 2 (https://h/m.tgz) has none',
    ]);
  });
});
