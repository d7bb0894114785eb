/**
 * A simple FetchHttpFile for the hf provider's tests, standing in for httpFileFetcher (src/storage/http/http-file.ts): one GET,
 * redirects followed by hand with the headers sent only to the URL's own endpoint, the body counted on the
 * guard and written to a new file, held to the listed size and digest by the real ContentCheck. No parts, no resume.
 */
import { request } from 'undici';
import { sameEndpoint } from '../../../src/core/endpoint';
import { writeNewFile } from '../../../src/fs';
import { responseStatusError, transportError } from '../../../src/net';
import type { FetchHttpFile, HttpFileRequest } from '../../../src/storage/http/http-file';
import { ContentCheck } from '../../../src/storage/listed-content';

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
      const check =
        file.expectedSize === undefined
          ? undefined
          : new ContentCheck(file.what, file.expectedSize, file.expectedDigest);
      const body = file.guard.count(check?.pass(response.body) ?? response.body);
      await writeNewFile(body, file.to, file.signal, `${file.what}: cannot save ${file.to}`);
      check?.verify();
      return;
    }
    throw new Error(`${file.what}: too many redirects`);
  };
  return { fetchFile, calls };
};
