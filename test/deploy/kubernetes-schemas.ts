/**
 * Rendered objects against the Kubernetes schemas, twice: kubernetes-models' JSON-schema validators (types,
 * required fields, formats) and TypeScript's excess-property check on its interfaces, which finds the unknown
 * fields (`readOnlyRootFileSystem`) that the schemas allow but `kubectl apply` (strict field validation) refuses.
 */
import { join } from 'node:path';
import * as ts from 'typescript';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import type { KubeObject } from './kustomize';

/** Each kind the manifests may hold: its validating model and the module and interface of its type. */
const kinds: Readonly<Record<string, { model: new (data: never) => { validate(): void }; type: string }>> = {
  'apps/v1 Deployment': { model: Deployment, type: 'kubernetes-models/apps/v1/Deployment:IDeployment' },
  'v1 ConfigMap': { model: ConfigMap, type: 'kubernetes-models/v1/ConfigMap:IConfigMap' },
  'v1 Service': { model: Service, type: 'kubernetes-models/v1/Service:IService' },
  'v1 ServiceAccount': { model: ServiceAccount, type: 'kubernetes-models/v1/ServiceAccount:IServiceAccount' },
  'rbac.authorization.k8s.io/v1 Role': {
    model: Role,
    type: 'kubernetes-models/rbac.authorization.k8s.io/v1/Role:IRole',
  },
  'rbac.authorization.k8s.io/v1 RoleBinding': {
    model: RoleBinding,
    type: 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding:IRoleBinding',
  },
  'monitoring.coreos.com/v1 ServiceMonitor': {
    model: ServiceMonitor,
    type: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor:IServiceMonitor',
  },
};

const kindOf = (object: KubeObject): (typeof kinds)[string] => {
  const kind = kinds[`${object.apiVersion} ${object.kind}`];
  if (kind === undefined) throw new Error(`no schema here for ${object.apiVersion} ${object.kind}: add it`);
  return kind;
};

/** What the JSON schema of its kind says is wrong with `object` (empty when it is valid). */
export const schemaProblems = (object: KubeObject): string[] => {
  try {
    new (kindOf(object).model)(object as never).validate();
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
};

const root = join(__dirname, '..', '..');
const checkedFile = join(root, 'test', 'deploy', '__rendered-manifests__.ts');

/**
 * TypeScript's complaints about `objects` typed as their kinds' interfaces, one line each, naming the object by
 * `labels[i]`: unknown fields, wrong types, missing required fields. One program for every object (~2 s).
 */
export const typeProblems = (objects: ReadonlyArray<KubeObject>, labels: ReadonlyArray<string>): string[] => {
  const types = objects.map((object) => kindOf(object).type.split(':') as [string, string]);
  const source = [
    ...types.map(([module, name], index) => `import type { ${name} as T${index} } from '${module}';`),
    ...objects.map(
      (object, index) => `export const object${index}: T${index} = ${JSON.stringify(object, null, 1)};`,
    ),
  ].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === checkedFile
      ? ts.createSourceFile(name, source, language)
      : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === checkedFile || fileExists.call(host, name);
  const program = ts.createProgram([checkedFile], options, host);
  const objectStarts = objects.map((_, index) => source.indexOf(`export const object${index}:`));
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const at = diagnostic.start ?? 0;
    const index = objectStarts.findLastIndex((start) => start <= at);
    const line = source.slice(source.lastIndexOf('\n', at) + 1, source.indexOf('\n', at)).trim();
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    return `${labels[index] ?? 'imports'}: ${message} (at ${line})`;
  });
};
