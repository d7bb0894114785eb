/** parseHfUri: KServe's hf:// rules and messages, huggingface_hub's repo id checks, no secret quoted. */
import * as E from 'fp-ts/Either';
import { parseHfUri } from '../../../src/storage/hub/hf-uri';

const left = (uri: string): string => {
  const parsed = parseHfUri(uri);
  if (E.isRight(parsed)) throw new Error(`${uri} parsed`);
  return parsed.left;
};

describe('parseHfUri', () => {
  it.each([
    ['hf://google-bert/bert-base-uncased', 'google-bert', 'bert-base-uncased', 'main'],
    ['hf://org/model:v1.0', 'org', 'model', 'v1.0'],
    [
      'hf://org/model:0123456789abcdef0123456789abcdef01234567',
      'org',
      'model',
      '0123456789abcdef0123456789abcdef01234567',
    ],
    // KServe: `revision = hash_value if hash_value else None`, and None is the default branch.
    ['hf://org/model:', 'org', 'model', 'main'],
    // partition(':') splits at the first colon: the rest is the revision.
    ['hf://org/model:a:b', 'org', 'model', 'a:b'],
    ['HF://Org_1/My.Model-2', 'Org_1', 'My.Model-2', 'main'],
  ])('reads %s as owner %s, name %s, revision %s', (uri, owner, name, revision) => {
    expect(parseHfUri(uri)).toEqual(
      E.right({ owner, name, repoId: `${owner}/${name}`, revision, display: uri }),
    );
  });

  it.each([
    ['hf://org', "Invalid Hugging Face URI format. Expected 'hf://owner/model[:revision]', got 'hf://org'"],
    [
      'hf://org/a/b',
      "Invalid Hugging Face URI format. Expected 'hf://owner/model[:revision]', got 'hf://org/a/b'",
    ],
    [
      'hf://org/model/',
      "Invalid Hugging Face URI format. Expected 'hf://owner/model[:revision]', got 'hf://org/model/'",
    ],
    ['hf:///model', 'Hugging Face repository owner cannot be empty in URI: hf:///model'],
    ['hf://org/', 'Hugging Face model name cannot be empty in URI: hf://org/'],
    ['hf://org/:main', 'Hugging Face model name cannot be empty in URI: hf://org/:main'],
  ])("refuses %s with KServe's message", (uri, message) => {
    expect(left(uri)).toBe(message);
  });

  it.each([
    ['hf://org/-model', 'the model name is not a Hugging Face repo id part'],
    ['hf://org/model.', 'the model name is not a Hugging Face repo id part'],
    ['hf://o rg/model', 'the owner is not a Hugging Face repo id part'],
    ['hf://org/a--b', 'cannot have -- or ..'],
    ['hf://org/a..b', 'cannot have -- or ..'],
    ['hf://org/model.git', 'cannot end with .git'],
    [`hf://org/${'m'.repeat(97)}`, 'at most 96 characters'],
    ['hf://org/model:ma\nin', 'control character'],
  ])("refuses %s as huggingface_hub's validate_repo_id would", (uri, why) => {
    expect(left(uri)).toContain(why);
  });

  it('refuses user info without quoting it, pointing at HF_TOKEN', () => {
    const message = left('hf://me:hf_secretToken123@org/model');
    expect(message).not.toContain('hf_secretToken123');
    expect(message).toContain('HF_TOKEN');
  });

  it.each(['hf://org/model?x=1', 'hf://org/model:main?token=hf_queryToken456', 'hf://org/model#frag'])(
    'refuses %s, saying it takes no query or fragment, never quoting them',
    (uri) => {
      // Before, the message showed the URI without its query (`hf://org/model`, a valid repo) and blamed the model
      // name, or took `main?token=…` for the revision and asked the Hub for it.
      const message = left(uri);
      expect(message).toContain('takes no query or fragment');
      expect(message).not.toContain('hf_queryToken456');
    },
  );

  it('refuses another scheme', () => {
    expect(left('s3://org/model')).toBe('s3://org/model is not an hf:// URI');
  });
});
