/** The content registry: which installed models hold the files of which stored content, bounded and pure. */
import type { ModelName } from '../core/model-name';

/** How much the registry remembers; what falls out is only a fill missed (the model is downloaded instead). */
export interface ContentRegistryBounds {
  /** Content identities remembered, the least recently used forgotten first. */
  readonly identities: number;
  /** Models remembered per identity, the most recently installed ones: one whole source is enough to fill from. */
  readonly sourcesPerIdentity: number;
}

/** A model dir holds one version at a time, so a model is a source of one identity at most. */
export interface ContentRegistry {
  /** The models installed from `identity`, most recent first; counts as a use of it. */
  readonly sources: (identity: string) => ReadonlyArray<ModelName>;
  /** `name` now holds `identity`'s files (undefined: files of no known identity), and no other identity's. */
  readonly installed: (name: ModelName, identity: string | undefined) => void;
  /** `name` holds no identity's files any more (removed, or found unfit to fill from). */
  readonly forget: (name: ModelName) => void;
  readonly size: () => number;
}

export const createContentRegistry = (
  // For a config of thousands of models: at most 4096 × 4 names, a few hundred KiB.
  bounds: ContentRegistryBounds = { identities: 4096, sourcesPerIdentity: 4 },
): ContentRegistry => {
  // A Map iterates in insertion order: re-inserting an identity on each use keeps the least recently used first.
  // Each identity's set likewise holds its sources oldest first.
  const byIdentity = new Map<string, Set<ModelName>>();
  const identityOf = new Map<ModelName, string>();

  const touch = (identity: string, names: Set<ModelName>): void => {
    byIdentity.delete(identity);
    byIdentity.set(identity, names);
  };

  const dropIdentity = (identity: string): void => {
    for (const name of byIdentity.get(identity) ?? []) identityOf.delete(name);
    byIdentity.delete(identity);
  };

  const forget = (name: ModelName): void => {
    const identity = identityOf.get(name);
    if (identity === undefined) return;
    identityOf.delete(name);
    const names = byIdentity.get(identity);
    names?.delete(name);
    if (names?.size === 0) byIdentity.delete(identity);
  };

  const installed = (name: ModelName, identity: string | undefined): void => {
    forget(name);
    if (identity === undefined) return;
    const names = byIdentity.get(identity) ?? new Set<ModelName>();
    names.add(name);
    identityOf.set(name, identity);
    touch(identity, names);
    for (const oldest of names) {
      if (names.size <= bounds.sourcesPerIdentity) break;
      names.delete(oldest);
      identityOf.delete(oldest);
    }
    for (const [leastUsed] of byIdentity) {
      if (byIdentity.size <= bounds.identities) break;
      dropIdentity(leastUsed);
    }
  };

  const sources = (identity: string): ReadonlyArray<ModelName> => {
    const names = byIdentity.get(identity);
    if (names === undefined) return [];
    touch(identity, names);
    return [...names].reverse();
  };

  return { sources, installed, forget, size: () => byIdentity.size };
};
