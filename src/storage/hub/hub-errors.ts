/** hubStatusError and hubFileError: the Hub's error answers (status, `X-Error-Code`, `X-Error-Message`) as EffectErrors a person can act on. */
import { EffectError, httpStatusError, permanentError } from '../../core/errors';
import type { HfRepo } from './hf-uri';

/** What is known of the request that failed. */
export interface HubFailure {
  readonly repo: HfRepo;
  /** Names the request: `resolving hf://org/repo:main`. */
  readonly what: string;
  readonly endpoint: string;
  /** Whether the request carried HF_TOKEN. */
  readonly withToken: boolean;
}

/** The Hub's answer: its status and the two headers huggingface_hub's `hf_raise_for_status` reads. */
export interface HubAnswer {
  readonly status: number;
  /** `X-Error-Code`: RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo. */
  readonly code?: string | undefined;
  /** `X-Error-Message`, or the body's error text. */
  readonly message?: string | undefined;
  /** The wait its Retry-After asked for (retryAfterOf), if it named one. */
  readonly retryAfterMs?: number | undefined;
}

// The Hub's words are quoted, bounded and on one line: a header may be anything a proxy put there.
const shown = (text: string | undefined): string =>
  (text ?? '')
    .replace(/\p{Cc}+/gu, ' ')
    .trim()
    .slice(0, 200);

const saying = ({ status, code, message }: HubAnswer): string => {
  const words = shown(message);
  return `HTTP ${status}${code ? ` ${shown(code)}` : ''}${words ? `: ${words}` : ''}`;
};

const denied = (message: string, status: number): EffectError =>
  new EffectError(message, false, { kind: 'http-status', status });

/** huggingface_hub's `hf_raise_for_status` answer to a token the Hub does not know. */
const invalidCredentials = 'Invalid credentials in Authorization header';

/**
 * The EffectError for an error answer of the Hub's API, read as `hf_raise_for_status` reads it (the kinds: the
 * table of docs/storage.md, "Hugging Face Hub"). The Hub answers 401 RepoNotFound for a missing repo as for a
 * private or gated one when no token is sent: a 401 says what to do with HF_TOKEN.
 */
export const hubStatusError = (failure: HubFailure, answer: HubAnswer): EffectError => {
  const { repo, what, endpoint, withToken } = failure;
  const { status, code } = answer;
  const said = saying(answer);
  const at = `${repo.repoId} at ${endpoint}`;
  if (code === 'RevisionNotFound') {
    return permanentError(
      'not-found',
      `${what}: revision ${JSON.stringify(repo.revision)} not found in ${at} (${said})`,
    );
  }
  if (code === 'EntryNotFound')
    return permanentError('not-found', `${what}: file not found in ${at} (${said})`);
  if (code === 'GatedRepo') {
    const todo = withToken
      ? "the account of HF_TOKEN has not been granted access: ask for it on the repo's page"
      : "ask for access on the repo's page and set HF_TOKEN to a token of an account that has it";
    return denied(`${what}: ${repo.repoId} is a gated repo: ${todo} (${said})`, status);
  }
  if (status === 401 && shown(answer.message) === invalidCredentials) {
    return denied(`${what}: ${endpoint} does not accept HF_TOKEN: set a valid token (${said})`, status);
  }
  if (code === 'RepoNotFound' || status === 401) {
    const why = withToken
      ? 'or HF_TOKEN cannot read it'
      : 'or it is private or gated: set HF_TOKEN to a token that can read it';
    const message = `${what}: repository ${at} not found, ${why} (${said})`;
    return status === 404 ? permanentError('not-found', message) : denied(message, status);
  }
  if (status === 403) {
    return denied(
      `${what}: ${endpoint} refuses access to ${repo.repoId}: check what HF_TOKEN may read (${said})`,
      status,
    );
  }
  if (status === 404) return permanentError('not-found', `${what}: not found in ${at} (${said})`);
  return httpStatusError(what, status, shown(answer.message), answer.retryAfterMs);
};

/**
 * A file download's failure, said for the Hub: the file fetcher sees no `X-Error-Code`, so a 401 or 403 is
 * explained by what the revision's answer said of the repo (gated or not), and a 404 of a file the listing named
 * at that commit is `not-found`. Anything else passes as the fetcher classified it.
 */
export const hubFileError = (
  failure: HubFailure,
  gated: boolean,
  path: string,
  error: EffectError,
): EffectError => {
  const { status } = error;
  if (error.kind !== 'http-status' || (status !== 401 && status !== 403 && status !== 404)) return error;
  const { repo, what, withToken } = failure;
  const file = `${what}: ${JSON.stringify(path)}`;
  // The fetcher named the transfer `${what}: ${path}`: said once is enough.
  const named = `${what}: ${path}`;
  const detail = (error.message.startsWith(named) ? error.message.slice(named.length) : error.message)
    .replace(/^[:\s]+/, '')
    .replace(/^returned /, '');
  if (status === 404) {
    return permanentError('not-found', `${file} is listed but not found in ${repo.repoId} (${detail})`);
  }
  const todo = gated
    ? withToken
      ? `${repo.repoId} is a gated repo and the account of HF_TOKEN has not been granted access`
      : `${repo.repoId} is a gated repo: ask for access and set HF_TOKEN to a token of an account that has it`
    : withToken
      ? 'HF_TOKEN cannot read it'
      : 'set HF_TOKEN to a token that can read it';
  return denied(`${file}: access refused: ${todo} (${detail})`, status);
};
