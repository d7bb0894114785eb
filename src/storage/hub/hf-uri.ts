/** parseHfUri: `hf://<owner>/<model>[:<revision>]` read as KServe's storage initializer reads it, checked as huggingface_hub checks a repo id. */
import * as E from 'fp-ts/Either';
import { redactUri } from '../../core/storage-uri';

/** A model repo on the Hub and the revision asked for. */
export interface HfRepo {
  /** The user or organization: `google-bert`. */
  readonly owner: string;
  /** The repo's name: `bert-base-uncased`. */
  readonly name: string;
  /** `owner/name`, as the Hub's URLs carry it. */
  readonly repoId: string;
  /** A branch, a tag or a commit; `main` when the URI names none (huggingface_hub's DEFAULT_REVISION). */
  readonly revision: string;
  /** The URI for messages (redacted). */
  readonly display: string;
}

/** huggingface_hub's DEFAULT_REVISION. */
export const defaultRevision = 'main';

// huggingface_hub's REPO_ID_REGEX for one part (utils/_validators.py): 1 to 96 of a-z, A-Z, 0-9, `_`, `-`, `.`,
// starting and ending with a word character (its `\b`).
const partPattern = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$/;

/** Why `part` (the owner or the name) cannot be part of a Hub repo id, as validate_repo_id says it; undefined if it can. */
const badPart = (part: string): string | undefined => {
  if (!partPattern.test(part)) {
    return (
      "it must use alphanumeric chars, '-', '_' or '.', cannot start or end with '-' or '.', and is at most " +
      '96 characters'
    );
  }
  if (part.includes('--') || part.includes('..')) return 'it cannot have -- or ..';
  return undefined;
};

/**
 * The repo and revision of `uri`, or why it names none (a Left that shows the URI redacted, never its user info).
 * KServe's rules (`_download_hf`): after `hf://`, exactly one `/`; the owner and the model name non-empty; the
 * revision is what follows the first `:` of the model part, and an empty one means the default branch. Then
 * huggingface_hub's `validate_repo_id`, which KServe's `snapshot_download` call runs: the characters of each
 * part, no `--` or `..`, no `.git` ending. The scheme is matched in any case, as the router matches it.
 */
export const parseHfUri = (uri: string): E.Either<string, HfRepo> => {
  const display = redactUri(uri);
  const scheme = /^hf:\/\//i.exec(uri);
  if (scheme === null) return E.left(`${display} is not an hf:// URI`);
  const rest = uri.slice(scheme[0].length);
  const components = rest.split('/');
  if (components.length !== 2) {
    return E.left(
      `Invalid Hugging Face URI format. Expected 'hf://owner/model[:revision]', got '${display}'`,
    );
  }
  const [owner = '', modelPart = ''] = components;
  // Not quoted: text before an `@` is user info, maybe a token.
  if (owner.includes('@')) {
    return E.left(`${display}: an hf:// URI carries no credentials; put the token in HF_TOKEN`);
  }
  // Not quoted either (a query may carry a token), and said as such: the URI shown has neither, so blaming the
  // name (`hf://org/model?x`) or asking the Hub for the revision `main?x` named what the reader cannot see.
  if (/[?#]/.test(rest)) return E.left(`${display}: an hf:// URI takes no query or fragment ('?' or '#')`);
  if (owner === '') return E.left(`Hugging Face repository owner cannot be empty in URI: ${display}`);
  const colon = modelPart.indexOf(':');
  const name = colon === -1 ? modelPart : modelPart.slice(0, colon);
  const revision = colon === -1 ? '' : modelPart.slice(colon + 1);
  if (name === '') return E.left(`Hugging Face model name cannot be empty in URI: ${display}`);
  for (const [what, part] of [
    ['owner', owner],
    ['model name', name],
  ] as const) {
    const why = badPart(part);
    if (why !== undefined)
      return E.left(`${display}: the ${what} is not a Hugging Face repo id part: ${why}`);
  }
  if (name.endsWith('.git')) return E.left(`${display}: the model name cannot end with .git`);
  if (/\p{Cc}/u.test(revision)) return E.left(`${display}: the revision holds a control character`);
  return E.right({
    owner,
    name,
    repoId: `${owner}/${name}`,
    revision: revision === '' ? defaultRevision : revision,
    display,
  });
};
