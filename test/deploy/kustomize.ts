/**
 * Real kustomize for the tests: `renderKustomization(dir)` is `kustomize build <dir>`, parsed. The binary is the
 * version scripts/install-kustomize.sh pins, built from the Go module proxy into the machine's cache the first
 * time a test asks (1.5–3 minutes, announced on stderr; parallel workers wait on one lock), a file test after.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '../real-servers/paths';

/** A JSON value, as YAML manifests parse to. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** True for a JSON object (not an array, not null). */
export const isJsonObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A Kubernetes object as a manifest holds it. */
export interface KubeObject extends JsonObject {
  apiVersion: string;
  kind: string;
  metadata: JsonObject & { name: string; namespace?: string };
}

/** Every document of a YAML file or text, as JSON; a syntax error or a duplicate key throws. */
export const parseYamlDocuments = (text: string, source: string): Json[] =>
  parseAllDocuments(text).flatMap((document) => {
    const [error] = document.errors;
    if (error !== undefined) throw new Error(`${source}: ${error.message}`);
    const value = document.toJS() as Json;
    return value === null ? [] : [value];
  });

/** The id kustomize keeps unique: kind, namespace, name. */
export const objectId = (object: KubeObject): string =>
  `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;

let installed: string | undefined;

/** The pinned kustomize binary, built first when this machine has none (the installer's lines go to stderr). */
const kustomizeBinary = (): string => {
  const script = join(repoRoot, 'scripts', 'install-kustomize.sh');
  try {
    return (installed ??= execFileSync('bash', [script], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim());
  } catch (error) {
    throw new Error(`no kustomize to render with: ${script} failed (its output is above)`, { cause: error });
  }
};

/**
 * The objects `kustomize build <dir>` prints, in its order (by kind). A failed build throws with kustomize's
 * message.
 */
export const renderKustomization = (dir: string): KubeObject[] =>
  parseYamlDocuments(
    execFileSync(kustomizeBinary(), ['build', dir], { encoding: 'utf8', stdio: 'pipe' }),
    `kustomize build ${dir}`,
  ) as KubeObject[];
