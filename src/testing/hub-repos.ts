/** The Hub stand-in's model repos: commits of files, branches and tags, renames, who may read what — and what the Hub answers when one may not. */
import { createHash, randomBytes } from 'node:crypto';

/** A file's content; `lfs` says whether the Hub stores it in LFS (answers its resolve with a CDN redirect). */
export type HubFileSpec =
  string | Uint8Array | { readonly data: string | Uint8Array; readonly lfs?: boolean };

/** Who may see a repo: anyone (public), a granted token for its files (gated), a granted token for all (private). */
export interface HubRepoOptions {
  readonly private?: boolean;
  /** A gated repo's metadata and tree are public; its files need a token of an account granted access. */
  readonly gated?: false | 'auto' | 'manual';
}

/** A file of a commit as the Hub keeps it. */
export interface StoredHubFile {
  readonly data: Buffer;
  readonly lfs: boolean;
  /** The git blob id (sha1 of `blob <size>\0<data>`): the tree's `oid`, a small file's ETag. */
  readonly oid: string;
  /** The LFS object id (sha256 of the data): its `X-Linked-Etag` and CDN name. */
  readonly sha256: string;
}

/** One repo: its commits by sha, its branches and tags. */
export interface StoredRepo {
  readonly options: HubRepoOptions;
  readonly commits: Map<string, ReadonlyMap<string, StoredHubFile>>;
  readonly branches: Map<string, string>;
  readonly tags: Map<string, string>;
}

/** What the Hub answers when a request cannot go on: status, `X-Error-Code`, `X-Error-Message`. */
export interface HubRefusal {
  readonly status: number;
  readonly code?: string;
  readonly message: string;
}

// The Hub's default .gitattributes sends these to LFS; so does any file over 10 MB.
const lfsPattern =
  /\.(bin|safetensors|onnx|pt|pth|h5|msgpack|gguf|ckpt|pb|tflite|joblib|pkl|npy|npz|zip|tar|gz)$/i;
const lfsMinBytes = 10 * 1000 * 1000;

const sha1 = (data: Buffer | string): string => createHash('sha1').update(data).digest('hex');

const storedFile = (path: string, spec: HubFileSpec): StoredHubFile => {
  const raw = typeof spec === 'string' || spec instanceof Uint8Array ? spec : spec.data;
  const data = Buffer.from(raw);
  const lfs =
    typeof spec === 'object' && !(spec instanceof Uint8Array) && spec.lfs !== undefined
      ? spec.lfs
      : lfsPattern.test(path) || data.length > lfsMinBytes;
  return {
    data,
    lfs,
    oid: sha1(Buffer.concat([Buffer.from(`blob ${data.length}\0`), data])),
    sha256: createHash('sha256').update(data).digest('hex'),
  };
};

/** The repos, the tokens and the renames of one stand-in. */
export class HubRepos {
  private readonly repos = new Map<string, StoredRepo>();
  private readonly renamed = new Map<string, string>();
  private readonly tokens = new Map<string, Set<string>>();

  /** Creates `repoId`, or sets the options of the one a commit created: whichever comes first, it ends private. */
  create(repoId: string, options: HubRepoOptions = {}): void {
    const repo = this.repos.get(repoId);
    this.repos.set(repoId, {
      commits: new Map(),
      branches: new Map(),
      tags: new Map(),
      ...repo,
      options: { ...repo?.options, ...options },
    });
  }

  /** A new commit on `branch` (default `main`) holding exactly `files`; the repo is created if missing. */
  commit(repoId: string, files: Readonly<Record<string, HubFileSpec>>, branch = 'main'): string {
    this.create(repoId);
    const repo = this.repos.get(repoId)!;
    const stored = new Map(Object.entries(files).map(([path, spec]) => [path, storedFile(path, spec)]));
    const sha = sha1(`${repoId} ${branch} ${repo.commits.size} ${randomBytes(8).toString('hex')}`);
    repo.commits.set(sha, stored);
    repo.branches.set(branch, sha);
    return sha;
  }

  tag(repoId: string, tag: string, sha: string): void {
    this.repos.get(repoId)?.tags.set(tag, sha);
  }

  /** `from` now answers with a redirect to `to` (the repo moves there), as the Hub does for renamed repos. */
  rename(from: string, to: string): void {
    const repo = this.repos.get(from);
    if (repo === undefined) return;
    this.repos.delete(from);
    this.repos.set(to, repo);
    this.renamed.set(from, to);
  }

  /** Makes `token` known to the Hub, granted read access to `repoIds` (private ones, and gated ones' files). */
  addToken(token: string, repoIds: ReadonlyArray<string> = []): void {
    const granted = this.tokens.get(token) ?? new Set<string>();
    for (const id of repoIds) granted.add(id);
    this.tokens.set(token, granted);
  }

  /** Where a renamed repo went, if it did. */
  movedTo(repoId: string): string | undefined {
    return this.renamed.get(repoId);
  }

  /**
   * The repo `repoId` as the bearer of `token` (undefined: none sent) may see it for `what` (`meta`: the revision
   * and tree APIs; `files`: resolve), or the Hub's refusal: an unknown token 401 (any repo); a missing or private
   * repo without a token 401 RepoNotFound (the Hub says the same for both), with a token that cannot read it 404;
   * a gated repo's files without a token 401 GatedRepo, with one not granted 403 GatedRepo.
   */
  access(repoId: string, token: string | undefined, what: 'meta' | 'files'): StoredRepo | HubRefusal {
    const granted = token === undefined ? undefined : this.tokens.get(token);
    if (token !== undefined && granted === undefined) {
      return { status: 401, message: 'Invalid credentials in Authorization header' };
    }
    const repo = this.repos.get(repoId);
    if (repo === undefined || (repo.options.private === true && granted?.has(repoId) !== true)) {
      return token === undefined
        ? { status: 401, code: 'RepoNotFound', message: 'Invalid username or password.' }
        : { status: 404, code: 'RepoNotFound', message: 'Repository not found' };
    }
    const gated = repo.options.gated !== undefined && repo.options.gated !== false;
    if (what === 'files' && gated && granted?.has(repoId) !== true) {
      return token === undefined
        ? {
            status: 401,
            code: 'GatedRepo',
            message: `Access to model ${repoId} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
          }
        : {
            status: 403,
            code: 'GatedRepo',
            message: `Access to model ${repoId} is restricted and you are not in the authorized list. Visit https://huggingface.co/${repoId} to ask for access.`,
          };
    }
    return repo;
  }
}

/** The commit `revision` names in `repo` (a branch, a tag or a full commit sha), if any. */
export const commitOf = (repo: StoredRepo, revision: string): string | undefined =>
  repo.branches.get(revision) ??
  repo.tags.get(revision) ??
  (repo.commits.has(revision) ? revision : undefined);
