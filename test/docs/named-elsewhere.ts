/**
 * The names the docs may give that are not modelsync's, reviewed one by one: other programs' flags and variables
 * (allowed only in a block that names the program), the project's own tools (checked against their code), and
 * what modelsync does not read, each with the reason the docs name it. Keep these short: a name that belongs
 * to modelsync goes in its code, not here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { codeNames } from './code-names';
import { repoRoot } from './doc-mentions';

/** Other programs' names, each allowed in a block (paragraph, list, table row, code block) naming the program. */
export const otherPrograms: ReadonlyArray<{
  readonly program: RegExp;
  readonly names: ReadonlyArray<string>;
}> = [
  {
    program: /Triton|tritonserver/,
    names: [
      '--model-repository',
      '--model-control-mode',
      '--strict-readiness',
      '--http-thread-count',
      '--exit-timeout-secs',
      '--disable-auto-complete-config',
    ],
  },
  { program: /TorchServe/, names: ['--model-store', '--enable-model-api'] },
  { program: /KServe model server|your_server/, names: ['--models_dir', '--http_port', '--enable_grpc'] },
  {
    program: /MLServer|mlserver/,
    names: ['MLSERVER_MODEL_REPOSITORY_ROOT', 'MLSERVER_LOAD_MODELS_AT_STARTUP'],
  },
  {
    program: /MLServer|mlserver/,
    names: ['MLSERVER_PARALLEL_WORKERS', 'MLSERVER_MODEL_NAME', 'MLSERVER_MODELS_DIR'],
  },
  {
    program: /\bnode\b|Node|NODE_OPTIONS/,
    names: [
      '--max-semi-space-size',
      '--expose-gc',
      '--no-memory-reducer',
      '--no-concurrent-recompilation',
      '--no-wasm-tier-up',
      '--no-wasm-dynamic-tiering',
      '--v8-pool-size',
      '--no-turbofan',
      '--single-threaded-gc',
      '--external-memory-accounted-in-global-limit',
      '--max-old-space-size',
      '--require',
      '--openssl-legacy-provider',
      '--use-system-ca',
      '--use-openssl-ca',
    ],
  },
  {
    program: /\bnode\b|Node|NODE_OPTIONS/,
    names: ['NODE_OPTIONS', 'NODE_EXTRA_CA_CERTS', 'NODE_COMPILE_CACHE'],
  },
  { program: /\bnpm\b/, names: ['--omit'] },
  { program: /\bkubectl\b/, names: ['--type', '--field-selector'] },
  { program: /\btar\b/, names: ['--append'] },
  { program: /azurite/, names: ['--oauth', '--loose', '--skipApiVersionCheck', 'AZURITE_ACCOUNTS'] },
  { program: /aria2c/, names: ['--file-allocation'] },
  {
    program: /rclone/,
    names: [
      '--multi-thread-streams',
      '--multi-thread-cutoff',
      '--http-url',
      '--s3-provider',
      '--s3-force-path-style',
    ],
  },
  // What KServe copies of queue-proxy's environment into the agent; docs/kserve.md says modelsync ignores it.
  { program: /queue-proxy/, names: ['USER_PORT', 'CONTAINER_CONCURRENCY', 'SERVING_LOGGING'] },
];

/** The project's own tools: a name in a block about the tool must be one its code uses. */
export const ownTools: ReadonlyArray<{ readonly tool: RegExp; readonly names: () => ReadonlySet<string> }> = [
  { tool: /npm run bench/, names: lazily(() => codeNames('bench')) },
  { tool: /npm run demo/, names: lazily(() => codeNames('src/demo')) },
  { tool: /\btests?\b/, names: lazily(() => codeNames('test')) },
  // The image's build arguments and environment: what the Dockerfile declares.
  {
    tool: /Dockerfile/,
    names: lazily(
      () =>
        new Set(
          [...readFileSync(join(repoRoot, 'Dockerfile'), 'utf8').matchAll(/^(?:ARG|ENV) (\w+)/gm)].map(
            (match) => match[1]!,
          ),
        ),
    ),
  },
];

const kserveTuning = "KServe's initializer's tuning; docs/kserve.md names modelsync's own settings for it";

/** What modelsync does not read, or leaves to a library it calls, and why the docs name it. */
export const notRead: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: "glibc's, measured for the agent port's RSS and not set (docs/benchmarks.md)",
  ALL_PROXY: "curl's and requests' fallback proxy; docs/storage.md (Proxies) says modelsync does not read it",
  STORAGE_EMULATOR_HOST:
    "the GCS SDK's emulator switch, read no more since modelsync makes its own GCS requests",
  AZURE_TENANT_ID: "read by @azure/identity's DefaultAzureCredential, which modelsync hands to the Azure SDK",
  ENABLE_MULTI_CONTAINER_PROBES:
    "Knative's switch for a list of probes; modelsync takes a list whatever it says",
  HF_HUB_ENABLE_HF_TRANSFER: "injected by KServe's webhook; docs/kserve.md says why it is ignored",
  HF_XET_HIGH_PERFORMANCE: "injected by KServe's webhook; docs/kserve.md says why it is ignored",
  S3_CONNECT_TIMEOUT: kserveTuning,
  S3_READ_TIMEOUT: kserveTuning,
  S3_MAX_ATTEMPTS: kserveTuning,
  S3_MAX_FILE_CONCURRENCY: kserveTuning,
  AZURE_MAX_FILE_CONCURRENCY: kserveTuning,
  AZURE_MAX_CHUNK_CONCURRENCY: kserveTuning,
  AZURE_ACCESS_EXPIRES_ON_SECONDS:
    "KServe's agent's expiry of AZURE_ACCESS_TOKEN; docs/storage.md says why modelsync needs none",
};

function lazily<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
