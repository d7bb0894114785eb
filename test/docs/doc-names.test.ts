/**
 * The docs name nothing the code does not have: every flag, environment variable, metric (and its labels), /status
 * field and repository file that README.md and docs/*.md name is checked against the code itself — the CLI's parser,
 * the names the code of src/ uses, the metrics registry, a real /status answer, the tree. A failure lists each
 * name as `file:line: name`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Registry } from 'prom-client';
import { parseArgs } from '../../src/command/parse-args';
import { flagList } from '../../src/core/flags/app-config';
import type { KubeWatchStatus } from '../../src/config-source';
import type { ConfigState } from '../../src/core/status-document';
import type { ModelStatus } from '../../src/core/model-status';
import type { ModelName } from '../../src/core/model-name';
import { parseQuantity } from '../../src/core/quantity';
import { createMetrics, statusPages } from '../../src/surface';
import { kubeWatchJson } from '../../src/wiring/surface';
import { codeNames } from './code-names';
import { codeSpans, jsonBlocks, mentionsOf, repoRoot, unknownMentions, type Mention } from './doc-mentions';
import { notRead, otherPrograms, ownTools } from './named-elsewhere';

/** A name some other program owns is allowed in a block that names that program; a name of ours is checked. */
const ownedElsewhere = (mention: Mention): boolean =>
  otherPrograms.some(({ program, names }) => names.includes(mention.name) && program.test(mention.block)) ||
  ownTools.some(({ tool, names }) => tool.test(mention.block) && names().has(mention.name));

describe('the flags the docs name', () => {
  const unknownOption = (flag: string): boolean => {
    const parsed = parseArgs(['node', 'modelsync', flag], {});
    return parsed._tag === 'UsageError' && parsed.message.includes(`unknown option '${flag}'`);
  };

  it('are each one the command line takes (ours, or a KServe spelling it takes or refuses by name)', () => {
    const flags = mentionsOf(/(?<![\w-])(--[a-zA-Z][\w-]*)/);
    expect(flags.length).toBeGreaterThan(300);
    expect(
      unknownMentions(flags, (mention) => !unknownOption(mention.name) || ownedElsewhere(mention)),
    ).toEqual([]);
  });
});

describe('the environment variables the docs name', () => {
  // The flag table spells its env vars from its fields: read by the code, though no literal of it holds them.
  const read = new Set([...codeNames('src'), ...flagList.map(([, spec]) => spec.env)]);

  it('are each one the code of src/ reads, or one the docs say it does not read', () => {
    const names = mentionsOf(/\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|KUBECONFIG|awsAnonymousCredential)\b/).filter(
      // open(2)'s flags, zlib's and tar's error codes: constants, not variables.
      (mention) => !/^(O|Z|TAR)_/.test(mention.name),
    );
    expect(names.length).toBeGreaterThan(200);
    expect(
      unknownMentions(
        names,
        (mention) =>
          read.has(mention.name) || Object.hasOwn(notRead, mention.name) || ownedElsewhere(mention),
      ),
    ).toEqual([]);
  });
});

describe('the metrics the docs name', () => {
  const registry = (): Registry =>
    createMetrics({ statuses: () => [], inFlight: () => ({ downloads: 0, loads: 0 }), ready: () => true })
      .registry;
  const labelsOf = new Map(
    registry()
      .getMetricsAsArray()
      .map((metric) => [metric.name, (metric as unknown as { labelNames?: string[] }).labelNames ?? []]),
  );
  const series = (name: string): string | undefined =>
    [name, name.replace(/_(bucket|sum|count)$/, '')].find((metric) => labelsOf.has(metric));

  it('are each a series /metrics serves (a histogram with its _bucket, _sum and _count)', () => {
    const metrics = mentionsOf(/\b((?:modelsync|nodejs|process)_[a-z0-9_]*[a-z0-9])\b/);
    expect(metrics.length).toBeGreaterThan(30);
    expect(unknownMentions(metrics, (mention) => series(mention.name) !== undefined)).toEqual([]);
  });

  it('are selected by labels they have', () => {
    const selectors = mentionsOf(/\b(modelsync_[a-z0-9_]+\{[^}]*\})/).flatMap((mention) => {
      const [, metric, labels] = /^([^{]+)\{(.*)\}$/.exec(mention.name)!;
      return [...labels!.matchAll(/(\w+)\s*[=!]~?/g)].map((label) => ({
        ...mention,
        name: `${metric}{${label[1]}}`,
        known: labelsOf.get(series(metric!) ?? '')?.includes(label[1]!) ?? false,
      }));
    });
    expect(unknownMentions(selectors, (mention) => mention.known)).toEqual([]);
  });

  it("are listed in operating.md's table, each row with the labels its series has", () => {
    const rows = codeSpans()
      .filter((span) => span.at.startsWith('docs/operating.md') && /^\| `modelsync_/.test(span.block))
      .filter((span, index, all) => all.findIndex((other) => other.at === span.at) === index)
      .map((span) => span.block.split('|').map((cell) => cell.trim()));
    const listed = rows.map(([, metric, , labels]) => ({
      metrics: [...metric!.matchAll(/`(\w+)`/g)].map((match) => match[1]!),
      labels: [...labels!.replace(/\([^)]*\)/g, '').matchAll(/`(\w+)`/g)].map((match) => match[1]!).sort(),
    }));
    const ours = [...labelsOf.keys()].filter((name) => name.startsWith('modelsync_')).sort();
    expect(listed.flatMap(({ metrics }) => metrics).sort()).toEqual(ours);
    for (const { metrics, labels } of listed)
      for (const metric of metrics)
        expect([metric, labels]).toEqual([metric, [...labelsOf.get(metric)!].sort()]);
  });
});

describe('the /status fields the docs name', () => {
  // Every optional field filled (`Required`), so the answer holds every field /status can show.
  const model = (name: string, phase: ModelStatus['phase']): ModelStatus =>
    ({
      modelName: name as ModelName,
      phase,
      spec: {
        storageUri: 's3://b/m',
        framework: 'onnx',
        memory: parseQuantity('1Gi')!,
        selection: { allowPatterns: ['*.onnx'], ignorePatterns: ['*.pt'] },
      },
      reason: 'a reason',
      errorKind: 'http-status',
      attempt: 2,
      since: 1,
      durationMs: 3,
      bytesDownloaded: 4,
      bytesTotal: 5,
      filesFrom: 'node-cache',
      listedAgain: true,
    }) satisfies Required<ModelStatus>;
  const watch = {
    source: 'kube-api',
    configMap: 'ns/models',
    lastAliveAt: 1,
    lastActivityAt: 2,
    unreachableSince: 3,
    unreadSince: 4,
    stallMs: 5,
    lastReadResourceVersion: '6',
    lastSeenResourceVersion: '7',
    watchRestarts: 8,
    relists: 9,
    failures: 10,
    lastFailure: 'refused',
  } satisfies Required<KubeWatchStatus>;
  const config = {
    source: 'kube-api',
    watch: kubeWatchJson(watch),
    lastAccepted: { at: 1, checksum: 'abc' },
    lastRejected: { at: 2, reason: 'bad' },
  } satisfies Required<ConfigState>;
  const phases = ['Pending', 'Downloading', 'Loading', 'Loaded', 'Unloading', 'Retrying', 'Failed'] as const;
  const pages = statusPages({
    statuses: () => phases.map((phase, index) => model(`m${index}`, phase)),
    status: () => undefined, // no download runs
    config: () => config,
    ready: () => true,
  });
  const answers = [pages.page({ limit: 1 }), pages.page({ limit: 1, after: 'm0', phase: 'Failed' })];
  /** Each field's path (`config.watch.relists`; a list's items under the list's name). */
  const pathsOf = (value: unknown, prefix = ''): ReadonlyArray<string> =>
    Array.isArray(value)
      ? value.flatMap((item) => pathsOf(item, prefix))
      : value !== null && typeof value === 'object'
        ? Object.entries(value).flatMap(([key, inner]) => [
            `${prefix}${key}`,
            ...pathsOf(inner, `${prefix}${key}.`),
          ])
        : [];
  const fields = new Set(answers.flatMap((text) => pathsOf(JSON.parse(text))));
  /** `spec.storageUri` names `models.spec.storageUri`: a name is the end of a field's path. */
  const isField = (name: string): boolean => [...fields].some((path) => `.${path}`.endsWith(`.${name}`));

  it('are each a field of a real /status answer: the shown document, and paths the prose names', () => {
    const statusSection = (section: string): boolean => /Status document/.test(section);
    const shown = jsonBlocks()
      .filter((block) => statusSection(block.section))
      .flatMap((block) => pathsOf(JSON.parse(block.text)).map((name) => ({ name, at: block.at })));
    expect(shown.length).toBeGreaterThan(20);
    expect(shown.filter(({ name }) => !isField(name)).map(({ at, name }) => `${at}: ${name}`)).toEqual([]);
    const named = codeSpans().filter(
      (span) =>
        /^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)*$/.test(span.name) &&
        !['null', 'true', 'false'].includes(span.name) &&
        !/\.(json|pbtxt|properties|ya?ml|md|ts|txt)$/.test(span.name) && // a file's name, not a field
        (statusSection(span.section) || /^(ready|summary|page|config|models)\.(?!json$)/.test(span.name)),
    );
    expect(named.length).toBeGreaterThan(15);
    expect(unknownMentions(named, (span) => isField(span.name))).toEqual([]);
  });
});

describe('the npm scripts and benchmark suites the docs name', () => {
  const scripts = Object.keys(
    (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
      .scripts,
  );

  it('are each a script of package.json, and each suite one the bench runs', () => {
    const named = mentionsOf(/\bnpm run ([a-z][\w:-]*[\w])/);
    expect(named.length).toBeGreaterThan(30);
    expect(unknownMentions(named, (mention) => scripts.includes(mention.name))).toEqual([]);
    const suites = mentionsOf(
      /\bnpm run bench -- (?:\[?--[\w-]+\]? )*([a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)*)/,
    ).flatMap((mention) => mention.name.split(' ').map((name) => ({ ...mention, name })));
    expect(suites.length).toBeGreaterThan(8);
    const bench = codeNames('bench');
    expect(unknownMentions(suites, (mention) => bench.has(mention.name))).toEqual([]);
  });
});

describe('the repository files the docs name', () => {
  const skipped = new Set(['node_modules', 'dist', '.git', '.bench-build', '.model-servers']);
  const walk = (dir: string): ReadonlyArray<string> =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      skipped.has(entry.name)
        ? []
        : entry.isDirectory()
          ? walk(join(dir, entry.name))
          : [relative(repoRoot, join(dir, entry.name))],
    );
  const files = walk(repoRoot);
  /** A path, or the end of one (`hardening/disk/disk.test.ts`), `*` and `{a,b}` as the shell reads them. */
  const matches = (named: string): boolean => {
    // A built file is named by its source: a fresh clone has no dist/ before its first build.
    const built = /^dist\/(.*)\.js$/.exec(named);
    if (built !== null) return existsSync(join(repoRoot, 'src', `${built[1]}.ts`));
    const pattern = named
      .replace(/[.+^$()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\{([^}]*)\}/g, (_, choices: string) => `(${choices.split(',').join('|')})`);
    const path = new RegExp(`(^|/)${pattern}$`);
    return existsSync(join(repoRoot, named)) || files.some((file) => path.test(file));
  };

  it('each exist', () => {
    // A path from the root, or any code file; a file of a model dir or a pod (`sub/a.json`) is not the tree's.
    const named = codeSpans().filter(
      (span) =>
        /^(src|test|deploy|bench|scripts|docs|examples)\/[\w./*{},-]*[\w*}]$/.test(span.name) ||
        /^[\w./*{},-]+\.(ts|js|cjs)$/.test(span.name),
    );
    expect(named.length).toBeGreaterThan(150);
    expect(unknownMentions(named, (span) => matches(span.name))).toEqual([]);
  });
});
