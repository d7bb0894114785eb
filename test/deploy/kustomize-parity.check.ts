/**
 * `npm run check:kustomize`: the test-only renderer against real kustomize (`kustomize build`, else
 * `kubectl kustomize`) on every variant. Not part of `npm test`: CI has no kustomize binary, and nothing outside
 * the npm and Debian registries (whose kubectl is too old for components) can install one.
 */
import { execFileSync } from 'node:child_process';
import { renderKustomization, objectId, parseYamlDocuments, type KubeObject } from './kustomize';
import { podlessKustomizations, variants, withVariantDir } from './variants';

/** Each way to run kustomize: the command, its render arguments, and the arguments that print its version. */
const kustomizeCommands = [
  { command: 'kustomize', render: ['build'], version: ['version'] },
  { command: 'kubectl', render: ['kustomize'], version: ['version', '--client'] },
] as const;

const available = kustomizeCommands.find(({ command, version }) => {
  try {
    execFileSync(command, version, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});

const byId = (objects: ReadonlyArray<KubeObject>): Record<string, KubeObject> =>
  Object.fromEntries(objects.map((object) => [objectId(object), object]));

describe('the test-only renderer agrees with kustomize', () => {
  it('finds kustomize or kubectl on PATH (this check needs one)', () => {
    expect(available?.command).toMatch(/kustomize|kubectl/);
  });

  it.each(variants.map((variant) => [variant.name, variant] as const))('on %s', (_name, variant) => {
    const { command, render } = available!;
    withVariantDir(variant, (dir) => {
      const printed = execFileSync(command, [...render, dir], { encoding: 'utf8' });
      const real = parseYamlDocuments(printed, `${command} ${dir}`) as KubeObject[];
      expect(byId(renderKustomization(dir))).toEqual(byId(real));
    });
  });

  it.each(podlessKustomizations.map(({ name, dir }) => [name, dir] as const))('on %s', (_name, dir) => {
    const { command, render } = available!;
    const printed = execFileSync(command, [...render, dir], { encoding: 'utf8' });
    const real = parseYamlDocuments(printed, `${command} ${dir}`) as KubeObject[];
    expect(byId(renderKustomization(dir))).toEqual(byId(real));
  });
});
