/**
 * The V2 servers modelsync tells apart, once: `--server-kind` offers these (and `auto`), and each has a dialect
 * (`model-server/v2-dialect.ts`), so a kind cannot be added to one and missed by the other.
 */
export const v2ServerKinds = ['triton', 'mlserver', 'kserve', 'generic'] as const;

/** One of `v2ServerKinds`; `generic` assumes only what the protocol says. */
export type V2ServerKind = (typeof v2ServerKinds)[number];

/** The kind a server's metadata (`GET /v2`: `{ "name": … }`) names; anything else is `generic`. */
export const kindOfServerName = (name: unknown): V2ServerKind =>
  v2ServerKinds.find((kind) => kind === name) ?? 'generic';
