/** Tests of the /status document's parts: what one model and the config show, and how much of a reason. */
import { configStateJson, maxShownReasonBytes, modelStatusJson } from '../../src/core/status-document';
import { registerSecret } from '../../src/core/redact';
import type { ModelStatus } from '../../src/core/model-status';
import { name } from '../helpers/fixtures';

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

describe('modelStatusJson', () => {
  const failed = (reason: string): ModelStatus => ({
    modelName: name('m'),
    phase: 'Failed',
    errorKind: 'http-status',
    reason,
    attempt: 1,
  });

  it('shows a short reason whole', () => {
    expect(modelStatusJson(failed('load returned HTTP 500: boom')).error).toEqual({
      kind: 'http-status',
      reason: 'load returned HTTP 500: boom',
    });
  });

  it("cuts a long reason (a server's 64 KiB page) at a whole character within the cap, and says it was cut", () => {
    // 3-byte and 4-byte characters: a cut by code unit or by byte would split one.
    const reason = `load returned HTTP 500: ${'€😀'.repeat(10_000)}`;
    const shown = modelStatusJson(failed(reason)).error!.reason;
    expect(utf8Bytes(shown)).toBeLessThanOrEqual(maxShownReasonBytes);
    expect(maxShownReasonBytes).toBeLessThanOrEqual(2048);
    expect(shown).toMatch(/^load returned HTTP 500: €😀/);
    expect(shown).toMatch(/… \(cut: \d+ bytes in all, the log line has more\)$/);
    expect(shown).not.toMatch(/\p{Cs}/u); // no half of a surrogate pair
    expect(Buffer.from(shown, 'utf8').toString('utf8')).toBe(shown);
  });

  it('redacts before it cuts: a secret across the cut is not shown in part', () => {
    const secret = 'planted-secret-across-the-cut-0123456789';
    registerSecret(secret);
    const shown = modelStatusJson(
      failed(`${'x'.repeat(maxShownReasonBytes - 60)}${secret}${'y'.repeat(5000)}`),
    ).error!.reason;
    expect(shown).not.toContain('planted-secret');
  });
});

describe('configStateJson', () => {
  it("cuts a rejection's long reason as a model's", () => {
    const reason = `models.json is not a valid model list: ${'bad entry; '.repeat(10_000)}`;
    const shown = configStateJson({ source: 'config-dir', lastRejected: { at: 0, reason } }).lastRejected!;
    expect(utf8Bytes(shown.reason!)).toBeLessThanOrEqual(maxShownReasonBytes);
    expect(shown.reason).toMatch(/^models\.json is not a valid model list: bad entry; /);
  });
});
