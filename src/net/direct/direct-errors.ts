/** The errors a direct request fails with besides the socket's own: timeouts, a connection cut short, an abort. */

/** A timeout of a direct request; `name` and `code` are what the SDKs' retry rules and transportError look for. */
export class DirectTimeout extends Error {
  override readonly name = 'TimeoutError';
  constructor(
    readonly code: 'MODELSYNC_HEADERS_TIMEOUT' | 'MODELSYNC_BODY_TIMEOUT' | 'MODELSYNC_CONNECT_TIMEOUT',
    ms: number,
  ) {
    super(
      code === 'MODELSYNC_BODY_TIMEOUT'
        ? `no body bytes for ${ms} ms`
        : code === 'MODELSYNC_HEADERS_TIMEOUT'
          ? `no response head within ${ms} ms`
          : `no connection within ${ms} ms`,
    );
  }
}

/** The connection closed before its answer was whole: `ECONNRESET`, as Node's own HTTP client says it. */
export const cutShort = (message: string): Error => Object.assign(new Error(message), { code: 'ECONNRESET' });

/** What an aborted `signal` fails a request with: its reason, or an AbortError. */
export const abortError = (signal: AbortSignal): Error => {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
};
