/**
 * dialectAsk: which V2 server answers (`--server-kind auto`): its `GET /v2` metadata asked once it answers as a
 * server, asked again on a schedule while something else answers for it (a proxy's refusal, a login page).
 */
import * as t from 'io-ts';
import { EffectError, isRetryableStatus } from '../core/errors';
import { isGatekeeperStatus } from '../core/gatekeeper-status';
import { kindOfServerName, type V2ServerKind } from '../core/v2-server-kinds';
import { untilAborted } from '../core/waits';
import { decodeJsonText, discardBody, isOk, readText, transportError, type HttpCallResponse } from '../net';
import { isHtml, type serverEndpoint } from './server-options';
import { v2Dialects, type V2Dialect } from './v2-dialect';

/** The longest wait between two asks of a server whose metadata call is never answered by the server. */
const maxKindAskAgainMs = 60_000;

const errorBodyBytes = 64 * 1024;

const ServerMetadata = t.type({ name: t.unknown }, 'ServerMetadata');

/** The dialect to speak, and whether the last answer to the ask was something other than the server's. */
export interface DialectAsk {
  readonly dialect: (signal: AbortSignal) => Promise<V2Dialect>;
  readonly unsettled: () => boolean;
}

/**
 * The dialect of `options.kind`, or with `auto` the one the server says it speaks; `failure` reads a refused call's
 * error (v2ModelServer's).
 */
export const dialectAsk = (
  options: { readonly kind?: V2ServerKind | 'auto'; readonly kindAskAgainMs?: number },
  { shown, timeoutMs, call }: Pick<ReturnType<typeof serverEndpoint>, 'shown' | 'timeoutMs' | 'call'>,
  failure: (response: HttpCallResponse) => Promise<{ readonly error: EffectError }>,
): DialectAsk => {
  // The dialect, asked for once the server said it; until then the protocol alone, asked again on a schedule.
  let asked: Promise<V2Dialect> | undefined;
  const unaborted = new AbortController().signal;
  /** When to ask again, while the last answer was not the server's (a failed ask is asked again at the next call). */
  let askAgainAt: number | undefined;
  let askWaitMs = options.kindAskAgainMs ?? 1000;
  /** The dialect, and whether the server said it. */
  const askKind = async (signal: AbortSignal): Promise<{ speech: V2Dialect; settled: boolean }> => {
    const response = await call('GET', '/v2', `model server metadata (${shown})`, timeoutMs, signal);
    if (!isOk(response)) {
      // A server starting (or a proxy before it) answers 5xx or 429: no answer yet, so it is asked again.
      if (isRetryableStatus(response.status)) throw (await failure(response)).error;
      await discardBody(response);
      // A server that answers but has no metadata route speaks the protocol and nothing more we know of. A
      // redirect, 401, 403 or 407 is a proxy's before it (an auth proxy, a login page): the protocol alone for
      // now, but asked again, or Triton would be spoken to as generic for good (no wait for its unloads). So is an
      // HTML page (a proxy's 404 page for a route not set up yet): the servers answer in JSON or plain text.
      return {
        speech: v2Dialects.generic,
        settled: !isGatekeeperStatus(response.status) && !isHtml(response),
      };
    }
    // Past the cap it is junk as any other that is no metadata (a cut or a timeout is asked again).
    const text = await readText(response, errorBodyBytes).catch((error: unknown) => {
      if (error instanceof EffectError && error.kind === 'too-large') return '';
      throw error;
    });
    try {
      const metadata = decodeJsonText(text, ServerMetadata, response.init.what, 'server metadata');
      return { speech: v2Dialects[kindOfServerName(metadata.name)], settled: true };
    } catch {
      // A 200 that is no JSON object (a login page, a proxy's own page) is not the server's answer either.
      return { speech: v2Dialects.generic, settled: false };
    }
  };
  /** The shared ask's answer, or this caller's abort as an `aborted` failure of the metadata call. */
  const answered = (answer: Promise<V2Dialect>, signal: AbortSignal): Promise<V2Dialect> =>
    untilAborted(answer, signal).catch((error: unknown) => {
      if (!signal.aborted) throw error;
      throw transportError(signal.reason, { what: `model server metadata (${shown})`, aborted: true });
    });
  const dialect = (signal: AbortSignal): Promise<V2Dialect> => {
    if (options.kind !== 'auto') return Promise.resolve(v2Dialects[options.kind ?? 'generic']);
    // A server behind something that always refuses the call would otherwise be asked before each call.
    if (asked !== undefined && (askAgainAt === undefined || performance.now() < askAgainAt))
      return answered(asked, signal);
    askAgainAt = undefined;
    // Asked under no caller's signal (the call's own timeout bounds it): every call waiting for the answer shares it,
    // and the abort of the one that asked (a load superseded) failed all the others as "aborted".
    asked = askKind(unaborted).then(
      ({ speech, settled }) => {
        if (!settled) {
          askAgainAt = performance.now() + askWaitMs;
          askWaitMs = Math.min(askWaitMs * 2, maxKindAskAgainMs);
        }
        return speech;
      },
      (error: unknown) => {
        asked = undefined;
        throw error;
      },
    );
    // Its failure is each waiting caller's; with none left waiting (all aborted), it must not go unhandled.
    asked.catch(() => undefined);
    return answered(asked, signal);
  };
  return { dialect, unsettled: () => askAgainAt !== undefined };
};
