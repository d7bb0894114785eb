/** withoutValuesOf: what a request carried in its URL, taken out of what a server said back. */
import { minSecretLength, redactedMark } from './redact';

/**
 * A scrub for what a server says back to a request to `urls` (and where it redirected): each query value and password
 * of theirs of at least `minSecretLength` characters, as sent and decoded, becomes the mark. A server may quote the
 * path it was asked, query and all, outside any URL (a 404 page); those values are not registered, as a storage
 * URI's query changes with the config (a presigned URL per model) and the registry keeps what it is given.
 */
export const withoutValuesOf =
  (urls: ReadonlyArray<URL | undefined>) =>
  (text: string): string => {
    const values = new Set<string>();
    for (const url of urls) {
      if (url === undefined) continue;
      const raw = [
        url.password,
        ...url.search
          .slice(1)
          .split('&')
          .map((pair) => pair.split('=')[1] ?? ''),
      ];
      const decoded = [decodeURIComponentSafe(url.password), ...[...url.searchParams.values()]];
      for (const value of [...raw, ...decoded]) if (value.length >= minSecretLength) values.add(value);
    }
    return [...values]
      .sort((a, b) => b.length - a.length)
      .reduce((shown, value) => shown.replaceAll(value, redactedMark), text);
  };

const decodeURIComponentSafe = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};
