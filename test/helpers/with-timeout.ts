/** withTimeout: a promise that rejects, saying what it waited for, when `promise` takes longer than `timeoutMs`. */

export const withTimeout = <T>(
  promise: Promise<T>,
  timeoutMs: number,
  what: string | (() => string),
): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`,
          ),
        ),
      timeoutMs,
    );
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
