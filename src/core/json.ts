/** parseJson: JSON.parse as a value, telling a blank text (often a file caught half-written) from a malformed one. */
import { either as E } from 'fp-ts';
import { errorMessage } from './errors';

/** Why a text is not JSON: it is blank, or JSON.parse's reason (which may quote the text: never log it for secrets). */
export type JsonProblem =
  { readonly _tag: 'Blank' } | { readonly _tag: 'Malformed'; readonly reason: string };

/** The JSON value of `text`, or why there is none. */
export const parseJson = (text: string): E.Either<JsonProblem, unknown> => {
  if (text.trim() === '') return E.left({ _tag: 'Blank' });
  try {
    return E.right(JSON.parse(text) as unknown);
  } catch (cause) {
    return E.left({ _tag: 'Malformed', reason: errorMessage(cause) });
  }
};
