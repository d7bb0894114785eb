/**
 * KServe's agent spelling in the flag table: the flags KServe's pod webhook writes into the `agent` container
 * (`cmd/agent/main.go`), each mapped onto ours, and the bounds of the agent port's reverse proxy.
 */
import * as t from 'io-ts';
import type { FlagEntry } from './flag-spec';
import { byteCount, checkedCodec, duration, integerIn } from './setting-codecs';

/** Go's `time.ParseDuration` syntax (`10s`, `1m30s`, `-1ns`, `0`): what pflag accepts for `--probe-period`. */
const goDurationPattern = /^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$/;

const goDuration = checkedCodec(
  'GoDuration',
  (u): u is string => typeof u === 'string' && goDurationPattern.test(u),
  'expected a Go duration such as 10s, 1m30s or -1ns',
);

/** KServe's agent flags (their names and meaning as in KServe) and the proxy's bounds, in `--help` order. */
export const kserveFlags = {
  enablePuller: {
    help: "KServe's agent spelling, accepted as KServe writes it (also `--enable-puller=true`): modelsync always syncs the model list; `--enable-puller=false` is refused",
    codec: t.boolean,
  },
  componentPort: {
    arg: 'port',
    help: "KServe's agent spelling: the model server at `http://127.0.0.1:<port>` (instead of `--server-url`); the HTTP surface's port then also answers KServe's readiness check and reverse-proxies every other request to it (docs/kserve.md)",
    codec: integerIn('ComponentPort', 1, 65_535),
  },
  port: {
    arg: 'port',
    help: "KServe's agent spelling of `--http-port`",
    codec: integerIn('Port', 0, 65_535),
  },
  workers: {
    arg: 'n',
    help: "KServe's agent spelling of `--download-concurrency`",
    codec: integerIn('Workers', 1, 256),
  },
  probePeriod: {
    arg: 'duration',
    help: "KServe's agent flag, accepted with no effect (KServe parses it and uses it nowhere); a Go duration",
    codec: goDuration,
  },
  proxyTimeout: {
    arg: 'duration',
    default: '300s',
    help: "with `--component-port`: a proxied request whose bytes stop moving either way for this long gets 504 (before the answer starts) or is cut; queue-proxy's `REVISION_TIMEOUT_SECONDS` sets it when this is not given",
    codec: duration('ProxyTimeout', 1000, 86_400_000),
  },
  proxyBodyTimeout: {
    arg: 'duration',
    default: '20s',
    help: 'with `--component-port`: a request body must bring bytes within this of its head and of each other, and past it come at `--proxy-body-min-rate`; one that does not gets 408 and its request to the model server is aborted (time the model server holds the body back does not count)',
    codec: duration('ProxyBodyTimeout', 1000, 3_600_000),
  },
  proxyBodyMinRate: {
    arg: 'bytes',
    default: '1Ki',
    help: 'with `--component-port`: the bytes a second a request body must average once `--proxy-body-timeout` has passed (each such amount buys one more second); 0 = no minimum rate',
    codec: byteCount('ProxyBodyMinRate', 0, 1024 ** 3),
  },
  proxyMaxConnections: {
    arg: 'n',
    default: '1024',
    help: "with `--component-port`: connections the port holds at once (instead of `--http-max-connections`) and to the model server; one more evicts the oldest idle, sending its head, draining, or whose body was silent 1 s (408), or takes one of 16 more kept for the probes and the surface's paths",
    codec: integerIn('ProxyMaxConnections', 4, 65_535),
  },
} as const satisfies Readonly<Record<string, FlagEntry>>;

const orKServeAgent = "or keep KServe's agent image in the `agent` key of inferenceservice-config";

/**
 * The flags of KServe's agent that modelsync does not implement, by the feature they belong to, and what to change
 * in the InferenceService. KServe writes them only when the feature is on, so any of them means the feature.
 */
export const refusedKServeFeatures = [
  {
    feature: 'the KServe batcher',
    flags: ['--enable-batcher', '--max-batchsize', '--max-latency'],
    change: `remove spec.predictor.batcher from the InferenceService, ${orKServeAgent}`,
  },
  {
    feature: 'the KServe payload logger',
    flags: [
      '--log-url',
      '--source-uri',
      '--log-mode',
      '--log-store-path',
      '--log-store-format',
      // 0.19's blob-storage logger
      '--log-marshaller-url',
      '--log-marshaller-port',
      '--log-batch-size',
      '--log-batch-interval',
      '--inference-service',
      '--endpoint',
      '--component',
      '--metadata-headers',
      '--metadata-annotations',
      '--logger-ca-cert-file',
      '--logger-tls-skip-verify',
    ],
    change: `remove spec.predictor.logger from the InferenceService, ${orKServeAgent}`,
  },
] as const;
