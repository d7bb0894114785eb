/** A token read from a file, as it may be sent in an `Authorization` header: trimmed, one word of visible ASCII. */
import * as E from 'fp-ts/Either';
import { registerSecret } from './redact';

const describeChar = (char: string): string => {
  const code = char.codePointAt(0) ?? 0;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  if (/\s/u.test(char)) return `whitespace (${hex})`;
  if (code < 0x20 || code === 0x7f) return `a control character (${hex})`;
  return `a non-ASCII character (${hex})`;
};

/**
 * The token in `text` (a token file's content): surrounding whitespace dropped, as `kubectl create secret
 * --from-file`, `echo` and editors leave a trailing newline; or, as a value, why it cannot be a token: empty, or a
 * character that is not visible ASCII inside it (a header carrying one would be refused by Node's HTTP client,
 * and a token with a space is two words to the server). The reason names the character's position and code,
 * never the token.
 */
export const bearerToken = (text: string): E.Either<string, string> => {
  const token = text.trim();
  if (token === '') return E.left('is empty');
  const bad = /[^\x21-\x7e]/u.exec(token);
  if (bad === null) return E.right(token);
  return E.left(`holds ${describeChar(bad[0])} at character ${bad.index + 1} of the token`);
};

/**
 * `text` (what a token file holds) as the token to send, or why `where` cannot be sent, in the words every reader
 * of a token uses ("<where> holds … of the token; it is not sent").
 */
export const sendableToken = (text: string, where: string): E.Either<string, string> =>
  E.mapLeft((reason: string) => `${where} ${reason}; it is not sent`)(bearerToken(text));

/**
 * `sendableToken`, the text registered as a secret either way, as read and as sent (a token refused for a stray
 * character is still a secret): for a file that rarely changes. Not for a rotated token read at every request (the
 * API server's): each value would stay registered for good; those are JWTs, hidden by their shape.
 */
export const registeredToken = (text: string, where: string): E.Either<string, string> => {
  registerSecret(text);
  const token = sendableToken(text, where);
  if (E.isRight(token)) registerSecret(token.right);
  return token;
};
