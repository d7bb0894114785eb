/** bearerToken: what a token file may hold around and inside its token. */
import { either as E } from 'fp-ts';
import { bearerToken, registeredToken, sendableToken } from '../../src/core/bearer-token';
import { redact } from '../../src/core/redact';

describe('bearerToken', () => {
  it.each([
    ['a trailing newline', 'abc.def-ghi\n'],
    ['a trailing CR LF', 'abc.def-ghi\r\n'],
    ['spaces and tabs around it', ' \tabc.def-ghi \t\n'],
    ['nothing around it', 'abc.def-ghi'],
  ])('takes the token with %s', (_what, text) => {
    expect(bearerToken(text)).toEqual(E.right('abc.def-ghi'));
  });

  it.each([
    ['an empty file', '', 'is empty'],
    ['only a newline', '\n\n', 'is empty'],
    ['a space inside', 'abc def', 'holds whitespace (U+0020) at character 4 of the token'],
    ['a newline inside', 'abc\ndef', 'holds whitespace (U+000A) at character 4 of the token'],
    ['a NUL inside', 'ab\u0000c', 'holds a control character (U+0000) at character 3 of the token'],
    ['DEL inside', 'ab\u007fc', 'holds a control character (U+007F) at character 3 of the token'],
    ['a non-ASCII letter', 'tokén', 'holds a non-ASCII character (U+00E9) at character 4 of the token'],
  ])('refuses %s, naming the character but never the token', (_what, text, reason) => {
    expect(bearerToken(text)).toEqual(E.left(reason));
  });
});

describe('registeredToken', () => {
  it('gives the token to send, hidden from every log from then on (as read and as sent)', () => {
    expect(registeredToken(' tok-sendable-1\n', 'the token file /t')).toEqual(E.right('tok-sendable-1'));
    expect(redact("sent tok-sendable-1 and ' tok-sendable-1\n'")).not.toContain('tok-sendable-1');
  });

  it('says why the file cannot be sent, naming it and never the token, which is hidden all the same', () => {
    expect(registeredToken('tok sendable-2', 'the token file /t')).toEqual(
      E.left('the token file /t holds whitespace (U+0020) at character 4 of the token; it is not sent'),
    );
    expect(redact('a log line quoting tok sendable-2')).not.toContain('tok sendable-2');
  });
});

describe('sendableToken', () => {
  it('registers nothing (a rotated token read at every request would stay registered for good)', () => {
    expect(sendableToken('tok-unregistered-3', 'the token file /t')).toEqual(E.right('tok-unregistered-3'));
    expect(redact('tok-unregistered-3')).toBe('tok-unregistered-3');
  });
});
