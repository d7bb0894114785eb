/**
 * A simple FetchHttpFile for the hf provider's tests, standing in for httpFileFetcher (src/storage/http/http-file.ts): one GET,
 * redirects followed by hand with the headers sent only to the URL's own endpoint, the body counted on the
 * guard and written to a new file, a size other than the listed one failing as `changed`. No parts, no resume.
 */
import { request } from 'undici';
import { sameEndpoint } from '../../../src/core/endpoint';
import { retryableError } from '../../../src/core/errors';
import { writeNewFile } from '../../../src/fs';
import { responseStatusError, transportError } from '../../../src/net';
import type { FetchHttpFile, HttpFileRequest } from '../../../src/storage/http/http-file';

/** The fetcher, and every request it was given (in order). */
export const fakeFetchFile = (): { readonly fetchFile: FetchHttpFile; readonly calls: HttpFileRequest[] } => {
  const calls: HttpFileRequest[] = [];
  const fetchFile: FetchHttpFile = async (file) => {
    calls.push(file);
    let current = file.url;
    for (let hop = 0; hop < 10; hop++) {
      let response;
      try {
        response = await request(current, {
          headers: sameEndpoint(current, file.url) ? file.headers : {},
          signal: file.signal,
        });
      } catch (cause) {
        throw transportError(cause, { what: file.what, aborted: file.signal.aborted });
      }
      const location = response.headers['location'];
      if (response.statusCode >= 300 && response.statusCode < 400 && typeof location === 'string') {
        await response.body.dump();
        current = new URL(location, current);
        continue;
      }
      if (response.statusCode !== 200) {
        throw await responseStatusError(file.what, { status: response.statusCode, body: response.body });
      }
      let bytes = 0;
      const counted = async function* () {
        for await (const chunk of file.guard.count(response.body)) {
          bytes += chunk.byteLength;
          yield chunk;
        }
      };
      await writeNewFile(counted(), file.to, file.signal, `${file.what}: cannot save ${file.to}`);
      if (file.expectedSize !== undefined && bytes !== file.expectedSize) {
        throw retryableError('changed', `${file.what}: ${bytes} bytes, not the ${file.expectedSize} listed`);
      }
      return;
    }
    throw new Error(`${file.what}: too many redirects`);
  };
  return { fetchFile, calls };
};
