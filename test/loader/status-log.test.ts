/** Tests of the status log helpers: URLs in failure reasons lose their credentials, the rest of the text stays. */
import { redactUrisIn } from '../../src/loader/status-log';

describe('redactUrisIn', () => {
  it.each([
    [
      'leaves text without a URL as it is',
      'local path /models/m1 does not exist',
      'local path /models/m1 does not exist',
    ],
    [
      'removes the user info and query of an http URL',
      'cannot fetch http://user:pw@host:8080/m.tgz?sig=abc: refused',
      'cannot fetch http://host:8080/m.tgz refused',
    ],
    [
      'redacts every URL in the text',
      'GET https://a/x?token=1 then s3://key:secret@b/y#frag failed',
      'GET https://a/x then s3://b/y failed',
    ],
    ['redacts a URL in quotes', 'bad URL "gs://t@c/z?x=1"', 'bad URL "gs://c/z"'],
  ])('%s', (_, text, expected) => {
    expect(redactUrisIn(text)).toBe(expected);
  });
});
