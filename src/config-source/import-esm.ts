/** importEsm: a real dynamic `import()` from our CommonJS build, for ESM-only packages. */

/**
 * Imports `specifier` as an ES module. tsc compiling to CommonJS turns a literal `import()` into `require()`,
 * which cannot load an ESM-only package (`@kubernetes/client-node` 1.x); a function built at run time keeps the
 * real `import()`. The caller names the module's type (`typeof import` of the package).
 */
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- the one way to keep import() past tsc's CommonJS output
export const importEsm = new Function('specifier', 'return import(specifier)') as <T>(
  specifier: string,
) => Promise<T>;
