/**
 * The `agent` container KServe's pod webhook builds, reproduced from its source (pkg/webhook/admission/pod/
 * agent_injector.go, pkg/credentials/s3, and Knative's queue-proxy env from pkg/reconciler/revision/resources/
 * queue.go): its args in KServe's order and spelling, and its env in RawDeployment and in Serverless mode.
 */

/** A corev1.Probe as the API server holds it after defaulting (defaulting runs before the mutating webhook). */
export interface KubeProbe {
  readonly httpGet?: {
    readonly path?: string;
    readonly port: number | string;
    readonly host?: string;
    readonly scheme?: 'HTTP' | 'HTTPS';
    readonly httpHeaders?: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  };
  readonly tcpSocket?: { readonly port: number | string; readonly host?: string };
  readonly timeoutSeconds?: number;
  readonly periodSeconds?: number;
  readonly successThreshold?: number;
  readonly failureThreshold?: number;
}

/** Go's json.Marshal of a corev1.Probe: the handler inline, then the numbers, in the struct's field order. */
export const goProbeJson = (probe: KubeProbe): string =>
  JSON.stringify({
    ...(probe.httpGet !== undefined
      ? {
          httpGet: {
            ...(probe.httpGet.path !== undefined ? { path: probe.httpGet.path } : {}),
            port: probe.httpGet.port,
            ...(probe.httpGet.host !== undefined ? { host: probe.httpGet.host } : {}),
            ...(probe.httpGet.scheme !== undefined ? { scheme: probe.httpGet.scheme } : {}),
            ...(probe.httpGet.httpHeaders !== undefined ? { httpHeaders: probe.httpGet.httpHeaders } : {}),
          },
        }
      : {}),
    ...(probe.tcpSocket !== undefined ? { tcpSocket: probe.tcpSocket } : {}),
    ...(probe.timeoutSeconds !== undefined ? { timeoutSeconds: probe.timeoutSeconds } : {}),
    ...(probe.periodSeconds !== undefined ? { periodSeconds: probe.periodSeconds } : {}),
    ...(probe.successThreshold !== undefined ? { successThreshold: probe.successThreshold } : {}),
    ...(probe.failureThreshold !== undefined ? { failureThreshold: probe.failureThreshold } : {}),
  });

/** The Kubernetes defaults the API server fills into a user's readiness probe. */
export const defaultedProbe = (probe: KubeProbe): KubeProbe => ({
  ...probe,
  ...(probe.httpGet !== undefined ? { httpGet: { path: '/', scheme: 'HTTP', ...probe.httpGet } } : {}),
  timeoutSeconds: probe.timeoutSeconds ?? 1,
  periodSeconds: probe.periodSeconds ?? 10,
  successThreshold: probe.successThreshold ?? 1,
  failureThreshold: probe.failureThreshold ?? 3,
});

/** The pod annotations the predictor reconciler sets for a multi-model InferenceService (addAgentAnnotations). */
export interface AgentAnnotations {
  /** `internal.serving.kserve.io/configMountPath`: `/mnt/configs` in KServe; a temp dir here. */
  readonly configMountPath: string;
  /** `internal.serving.kserve.io/modelDir`: `/mnt/models` in KServe; a temp dir here. */
  readonly modelDir: string;
  /** The first containerPort of kserve-container (8080 when it has none). */
  readonly componentPort: number;
}

/** agent_injector.go's args with the puller on: `--enable-puller`, the dirs, and always last the component port. */
export const agentArgs = ({ configMountPath, modelDir, componentPort }: AgentAnnotations): string[] => [
  '--enable-puller',
  '--config-dir',
  configMountPath,
  '--model-dir',
  modelDir,
  '--component-port',
  String(componentPort),
];

/** RawDeployment: no queue-proxy, so the agent gets the user container's readiness probe as JSON. */
export const rawDeploymentEnv = (userProbe: KubeProbe): Record<string, string> => ({
  SERVING_READINESS_PROBE: goProbeJson(defaultedProbe(userProbe)),
});

/**
 * Serverless: the agent gets a copy of queue-proxy's env (makeQueueContainer), taken before KServe rewrites
 * queue-proxy's own USER_PORT to 9081, so the agent's copy keeps the user port. Knative resolved the probe to
 * 127.0.0.1:<user port> with its K-Kubelet-Probe header; no period means its aggressive probing.
 */
export const serverlessEnv = (userPort: number, revisionTimeoutSeconds = 300): Record<string, string> => ({
  SERVING_NAMESPACE: 'models',
  SERVING_SERVICE: 'iris-predictor',
  SERVING_CONFIGURATION: 'iris-predictor',
  SERVING_REVISION: 'iris-predictor-00001',
  QUEUE_SERVING_PORT: '8012',
  QUEUE_SERVING_TLS_PORT: '8112',
  CONTAINER_CONCURRENCY: '0',
  REVISION_TIMEOUT_SECONDS: String(revisionTimeoutSeconds),
  REVISION_RESPONSE_START_TIMEOUT_SECONDS: '0',
  REVISION_IDLE_TIMEOUT_SECONDS: '0',
  SERVING_POD: 'iris-predictor-00001-deployment-6d5c9b7d4-x2x8k',
  SERVING_POD_IP: '10.244.0.17',
  SERVING_LOGGING_CONFIG: '',
  SERVING_LOGGING_LEVEL: '',
  SERVING_REQUEST_LOG_TEMPLATE:
    '{"httpRequest": {"requestMethod": "{{.Request.Method}}", "requestUrl": "{{js .Request.RequestURI}}"}}',
  SERVING_ENABLE_REQUEST_LOG: 'false',
  SERVING_REQUEST_METRICS_BACKEND: 'prometheus',
  TRACING_CONFIG_BACKEND: 'none',
  TRACING_CONFIG_ZIPKIN_ENDPOINT: '',
  TRACING_CONFIG_DEBUG: 'false',
  TRACING_CONFIG_SAMPLE_RATE: '0.1',
  USER_PORT: String(userPort),
  SYSTEM_NAMESPACE: 'knative-serving',
  METRICS_DOMAIN: 'knative.dev/internal/serving',
  SERVING_READINESS_PROBE: goProbeJson({
    httpGet: {
      path: '/v2/health/ready',
      port: userPort,
      host: '127.0.0.1',
      scheme: 'HTTP',
      httpHeaders: [{ name: 'K-Kubelet-Probe', value: 'queue' }],
    },
    successThreshold: 1,
  }),
  ENABLE_PROFILING: 'false',
  SERVING_ENABLE_PROBE_REQUEST_LOG: 'false',
  METRICS_COLLECTOR_ADDRESS: '',
  HOST_IP: '10.0.0.4',
  ENABLE_HTTP2_AUTO_DETECTION: 'false',
  ENABLE_HTTP_FULL_DUPLEX: 'false',
  ROOT_CA: '',
  ENABLE_MULTI_CONTAINER_PROBES: 'false',
});

/**
 * The S3 env KServe's CredentialBuilder writes for a secret with keys `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`
 * (inferenceservice-config's s3AccessKeyIDName) and the annotations `serving.kserve.io/s3-endpoint`,
 * `s3-usehttps: "0"`, `s3-region`, `s3-usevirtualbucket: "false"` (a MinIO in the cluster).
 */
export const s3CredentialEnv = (
  endpoint: string,
  keys: { readonly accessKeyId: string; readonly secretAccessKey: string },
): Record<string, string> => {
  const host = new URL(endpoint).host;
  return {
    AWS_ACCESS_KEY_ID: keys.accessKeyId,
    AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
    S3_ENDPOINT: host,
    AWS_ENDPOINT_URL: `http://${host}`,
    S3_USE_HTTPS: '0',
    AWS_DEFAULT_REGION: 'us-east-1',
    S3_USER_VIRTUAL_BUCKET: 'false',
  };
};

/**
 * The headers of the kubelet's readiness probe of the agent container: a GET on 9081 with `K-Network-Probe: queue`, on
 * the path of the user container's httpGet readiness probe in RawDeployment, else `/` (agent_injector.go).
 */
export const kubeletProbeHeaders = { 'User-Agent': 'kube-probe/1.31', 'K-Network-Probe': 'queue' } as const;
