/**
 * hfSettingsFrom: HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE as huggingface_hub reads them, the token a secret; and
 * HF_XET_NUM_CONCURRENT_RANGE_GETS, KServe's bound on one file's ranged requests, as hf-xet reads it.
 */
import os from 'node:os';
import * as E from 'fp-ts/Either';
import { redact } from '../../../src/core/redact';
import { hfSettingsFrom, hfTokenFileOf } from '../../../src/storage/hub/hf-settings';

describe('hfSettingsFrom', () => {
  it('defaults to https://huggingface.co, anonymous, online', () => {
    expect(hfSettingsFrom({})).toEqual(E.right({ endpoint: 'https://huggingface.co', offline: false }));
  });

  it('takes HF_ENDPOINT without its trailing slashes, a path of its own kept (a mirror)', () => {
    expect(hfSettingsFrom({ HF_ENDPOINT: 'http://mirror.local:8080/hf//' })).toEqual(
      E.right({ endpoint: 'http://mirror.local:8080/hf', offline: false }),
    );
  });

  it.each([
    ['not a url', 'HF_ENDPOINT is not a URL'],
    ['ftp://mirror', 'HF_ENDPOINT is not an http(s) URL'],
    ['https://user:pw@mirror', 'HF_ENDPOINT must not carry user:password; put the token in HF_TOKEN'],
    ['https://mirror/?x=1', 'HF_ENDPOINT must not have a query or a fragment'],
  ])('refuses HF_ENDPOINT=%s without quoting it', (value, message) => {
    expect(hfSettingsFrom({ HF_ENDPOINT: value })).toEqual(E.left(message));
  });

  it('reads HF_TOKEN, trimmed and without CR/LF, and registers it as a secret', () => {
    const settings = hfSettingsFrom({ HF_TOKEN: ' hf_settingsTestToken42\r\n' });
    expect(settings).toEqual(
      E.right({ endpoint: 'https://huggingface.co', token: 'hf_settingsTestToken42', offline: false }),
    );
    expect(redact('sent hf_settingsTestToken42')).not.toContain('hf_settingsTestToken42');
  });

  it('falls back to HUGGING_FACE_HUB_TOKEN, and an empty token means none', () => {
    expect(hfSettingsFrom({ HUGGING_FACE_HUB_TOKEN: 'hf_olderName77' })).toEqual(
      E.right({ endpoint: 'https://huggingface.co', token: 'hf_olderName77', offline: false }),
    );
    expect(hfSettingsFrom({ HF_TOKEN: '  ' })).toEqual(
      E.right({ endpoint: 'https://huggingface.co', offline: false }),
    );
  });

  it('refuses a token with a space inside, naming the variable and never the token', () => {
    const settings = hfSettingsFrom({ HF_TOKEN: 'hf_two words' });
    expect(E.isLeft(settings) && settings.left).toBe(
      'HF_TOKEN holds whitespace (U+0020) at character 7 of the token',
    );
  });

  it.each(['1', 'true', 'ON', 'yes'])('is offline with HF_HUB_OFFLINE=%s', (value) => {
    expect(hfSettingsFrom({ HF_HUB_OFFLINE: value })).toEqual(
      E.right({ endpoint: 'https://huggingface.co', offline: true }),
    );
  });

  it('is offline with TRANSFORMERS_OFFLINE=1 when HF_HUB_OFFLINE is empty, online with HF_HUB_OFFLINE=0', () => {
    expect(hfSettingsFrom({ HF_HUB_OFFLINE: '', TRANSFORMERS_OFFLINE: '1' })).toEqual(
      E.right({ endpoint: 'https://huggingface.co', offline: true }),
    );
    expect(hfSettingsFrom({ HF_HUB_OFFLINE: '0' })).toEqual(
      E.right({ endpoint: 'https://huggingface.co', offline: false }),
    );
  });

  it.each([
    ['8', 8],
    [' 2 ', 2],
    ['1', 1],
  ])(
    'takes HF_XET_NUM_CONCURRENT_RANGE_GETS=%j as the most connections one file is fetched over',
    (value, most) => {
      expect(hfSettingsFrom({ HF_XET_NUM_CONCURRENT_RANGE_GETS: value })).toEqual(
        E.right({ endpoint: 'https://huggingface.co', offline: false, streamsPerFile: most }),
      );
    },
  );

  it.each(['0', '', '  '])(
    'sets no bound of its own with HF_XET_NUM_CONCURRENT_RANGE_GETS=%j (hf-xet: 0 is none)',
    (value) => {
      expect(hfSettingsFrom({ HF_XET_NUM_CONCURRENT_RANGE_GETS: value })).toEqual(
        E.right({ endpoint: 'https://huggingface.co', offline: false }),
      );
    },
  );

  it.each(['eight', '-1', '1.5', '0x10', '4097', '1e3', '123456789012345678901234567890'])(
    'refuses HF_XET_NUM_CONCURRENT_RANGE_GETS=%s, naming the variable and the bounds',
    (value) => {
      const settings = hfSettingsFrom({ HF_XET_NUM_CONCURRENT_RANGE_GETS: value });
      expect(E.isLeft(settings) && settings.left).toMatch(
        /^HF_XET_NUM_CONCURRENT_RANGE_GETS: expected a whole number from 0 to 4096, got "[^"]{0,40}"/,
      );
    },
  );
});

describe('hfTokenFileOf: the token file huggingface_hub reads when the environment holds no token', () => {
  it('is ~/.cache/huggingface/token by default, else in XDG_CACHE_HOME, else in HF_HOME', () => {
    expect(hfTokenFileOf({ HOME: '/home/kserve/' })).toBe('/home/kserve/.cache/huggingface/token');
    expect(hfTokenFileOf({ HOME: '/home/kserve', XDG_CACHE_HOME: '/cache' })).toBe(
      '/cache/huggingface/token',
    );
    expect(hfTokenFileOf({ HOME: '/home/kserve', XDG_CACHE_HOME: '/cache', HF_HOME: '/hf' })).toBe(
      '/hf/token',
    );
  });

  it('is HF_TOKEN_PATH when set, its ~ and $VARIABLES expanded as Python expands them (an unset one kept)', () => {
    expect(hfTokenFileOf({ HF_TOKEN_PATH: '/var/run/secrets/hf/token' })).toBe('/var/run/secrets/hf/token');
    expect(hfTokenFileOf({ HOME: '/home/u', HF_TOKEN_PATH: '~/hf-token' })).toBe('/home/u/hf-token');
    expect(hfTokenFileOf({ SECRETS: '/s', HF_TOKEN_PATH: '$SECRETS/${SECRETS}/$UNSET/t' })).toBe(
      '/s//s/$UNSET/t',
    );
    expect(hfTokenFileOf({ HOME: '/h', HF_HOME: '~/hf' })).toBe('/h/hf/token');
  });

  it("leaves ~ as written, as Python does, when there is no HOME and the uid has no home (Node's homedir throws)", () => {
    const noHome = jest.spyOn(os, 'homedir').mockImplementation(() => {
      throw new Error('ENOENT: no such file or directory, uv_os_get_passwd');
    });
    try {
      expect(hfTokenFileOf({})).toBe('~/.cache/huggingface/token');
      expect(hfTokenFileOf({ HF_HOME: '~/hf' })).toBe('~/hf/token');
    } finally {
      noHome.mockRestore();
    }
  });

  it('is none while HF_TOKEN or HUGGING_FACE_HUB_TOKEN holds a token; a blank one does not count', () => {
    expect(hfTokenFileOf({ HF_TOKEN: 'hf_fromEnv1', HF_TOKEN_PATH: '/t' })).toBeUndefined();
    expect(hfTokenFileOf({ HUGGING_FACE_HUB_TOKEN: 'hf_fromEnv2', HF_TOKEN_PATH: '/t' })).toBeUndefined();
    expect(hfTokenFileOf({ HF_TOKEN: ' \n', HF_TOKEN_PATH: '/t' })).toBe('/t');
  });

  it('is none with HF_HUB_DISABLE_IMPLICIT_TOKEN, which drops the environment token too (nothing is sent)', () => {
    const env = { HF_HUB_DISABLE_IMPLICIT_TOKEN: '1', HF_TOKEN: 'hf_neverSent3', HF_TOKEN_PATH: '/t' };
    expect(hfTokenFileOf(env)).toBeUndefined();
    expect(hfSettingsFrom(env)).toEqual(E.right({ endpoint: 'https://huggingface.co', offline: false }));
    // Not read at all, as huggingface_hub does not: a token that could not be sent does not stop the start.
    expect(E.isRight(hfSettingsFrom({ ...env, HF_TOKEN: 'hf_two words' }))).toBe(true);
  });
});
