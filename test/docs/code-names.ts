/**
 * The names a folder's code uses — its identifiers and the text of its string literals, comments left out — read
 * with TypeScript's own parser: a name no code of `src/` holds is a name modelsync never reads.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { repoRoot } from './doc-mentions';

/** This folder's own files name every name its checks allow: their code would account for any of them. */
const checksDir = __dirname;

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? join(dir, entry.name) === checksDir
        ? []
        : sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );

/** Every identifier and string literal text (template parts included) of the `.ts` files under `dirs` (not this folder's). */
export const codeNames = (...dirs: ReadonlyArray<string>): ReadonlySet<string> => {
  const names = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) || ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node))
      names.add(node.text);
    ts.forEachChild(node, visit);
  };
  for (const file of dirs.flatMap((dir) => sourceFiles(join(repoRoot, dir))))
    visit(ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false));
  return names;
};
