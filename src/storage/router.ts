/** routeStorage: one download function over all storage providers, chosen by the URI's scheme. */
import { isLeft } from 'fp-ts/Either';
import { permanentError } from '../core/errors';
import { parseStorageUri, redactUri } from '../core/storage-uri';
import type { DownloadFunction, StorageProvider } from '../ports';

/**
 * A provider of the URIs it claims among those of a scheme another provider serves: Azure Blob URLs are https
 * URLs, which the http provider would fetch as one unauthenticated GET.
 */
export interface ClaimingProvider {
  /** What it serves, for messages and tests: `azure`. */
  readonly name: string;
  /** True for the URIs it serves (for Azure Blob: see isAzureBlobUri). */
  readonly claims: (uri: string) => boolean;
  readonly download: DownloadFunction;
}

/**
 * Downloads through the first claiming provider that claims the URI, else the provider serving the URI's scheme.
 * A bad URI (`invalid-uri`) and an unsupported scheme (`unsupported-scheme`) are permanent errors: retrying cannot
 * fix them, only a new spec can. Two providers claiming one scheme is a wiring bug.
 */
export const routeStorage = (
  providers: ReadonlyArray<StorageProvider>,
  claiming: ReadonlyArray<ClaimingProvider> = [],
): DownloadFunction & { readonly schemes: ReadonlyArray<string> } => {
  const byScheme = new Map<string, StorageProvider>();
  for (const provider of providers) {
    for (const scheme of provider.schemes) {
      if (byScheme.has(scheme)) throw new Error(`two storage providers serve the scheme ${scheme}`);
      byScheme.set(scheme, provider);
    }
  }
  const supported = [...byScheme.keys()].join(', ');

  const download: DownloadFunction = async (uri, targetDir, signal, progress, request) => {
    const parsed = parseStorageUri(uri);
    if (isLeft(parsed)) throw permanentError('invalid-uri', parsed.left);
    const provider = claiming.find((candidate) => candidate.claims(uri)) ?? byScheme.get(parsed.right.scheme);
    if (provider === undefined) {
      throw permanentError(
        'unsupported-scheme',
        `protocol not supported for storageUri ${redactUri(uri)}; supported: ${supported}`,
      );
    }
    return provider.download(uri, targetDir, signal, progress, request);
  };
  return Object.assign(download, { schemes: [...byScheme.keys()] });
};
