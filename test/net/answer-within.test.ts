import { once } from 'node:events';
import { answerWithin } from '../../src/net/answer-within';
import { timeoutOf } from '../../src/net/transport-error';

/** A send that settles only when its signal aborts, rejecting with what the client would throw (not the reason). */
const neverAnswers = (signal: AbortSignal): Promise<never> =>
  once(signal, 'abort').then(() => {
    throw new Error('the client says: aborted');
  });

describe('answerWithin', () => {
  it('passes on what the send resolves to within the deadline', async () => {
    await expect(answerWithin(1000, undefined, () => Promise.resolve('head'))).resolves.toBe('head');
  });

  it('aborts a send past the deadline and rejects with a headers timeout, whatever the client threw', async () => {
    const error = await answerWithin(50, undefined, neverAnswers).catch((caught: unknown) => caught);
    expect(timeoutOf(error)).toBe('headers');
    expect((error as Error).message).toBe('no answer within 50 ms');
  });

  it("rejects with the client's own error when the caller's signal aborts first", async () => {
    const caller = new AbortController();
    const sent = answerWithin(10_000, caller.signal, neverAnswers);
    caller.abort();
    await expect(sent).rejects.toThrow('the client says: aborted');
  });

  it("follows an SDK's signal that is only like an AbortSignal", async () => {
    let listener: (() => void) | undefined;
    const like = {
      aborted: false,
      addEventListener: (_type: 'abort', added: () => void) => (listener = added),
    };
    const sent = answerWithin(10_000, like, neverAnswers);
    listener!();
    await expect(sent).rejects.toThrow('the client says: aborted');
  });
});
