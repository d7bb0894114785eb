/**
 * pvc:// storage URIs as KServe maps them: `pvc://<claim>/<path>` is `<path>` on the claim, which the pod has
 * mounted at one root (KServe's webhook mounts the claim at `/mnt/pvc` and hands its initializer
 * `/mnt/pvc/<path>`), so the claim's name says which volume, not where under the root.
 */
import * as E from 'fp-ts/Either';
import { redactUri } from './redact';

/** A pvc:// URI: the claim's name and the path on it (`/`-separated, no empty, `.` or `..` parts; '' for its root). */
export interface PvcUri {
  readonly claim: string;
  readonly path: string;
}

const prefix = /^pvc:\/\//i;
// A PersistentVolumeClaim's name is a DNS subdomain (RFC 1123): what Kubernetes lets a claim be called.
const claimName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const maxClaimLength = 253;

/**
 * `uri` as KServe's `ParsePvcURI` splits it: the claim up to the first `/`, the rest the path, taken as written (no
 * percent-decoding, `?` and `#` are path characters). Empty and `.` parts are dropped, as the file system drops
 * them; a `..` part, a NUL or a claim Kubernetes could not name is refused, so the path stays under the root.
 */
export const parsePvcUri = (uri: string): E.Either<string, PvcUri> => {
  if (!prefix.test(uri)) return E.left(`${redactUri(uri)} is not a pvc:// URI`);
  const rest = uri.replace(prefix, '');
  const slash = rest.indexOf('/');
  const claim = slash < 0 ? rest : rest.slice(0, slash);
  if (claim.length === 0) return E.left(`${redactUri(uri)} names no claim: expected pvc://<claim>/<path>`);
  if (claim.length > maxClaimLength || !claimName.test(claim)) {
    return E.left(
      `${redactUri(uri)}: the claim name is not a Kubernetes name (lower-case letters, digits, '-', '.')`,
    );
  }
  const parts = (slash < 0 ? '' : rest.slice(slash + 1))
    .split('/')
    .filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) return E.left(`${redactUri(uri)}: its path must not contain '..'`);
  if (parts.some((part) => part.includes('\0'))) return E.left(`${redactUri(uri)}: its path contains NUL`);
  return E.right({ claim, path: parts.join('/') });
};

/** Where the files of `pvc` are, with its claim mounted at the absolute dir `root`: `<root>/<path>`. */
export const pvcLocalPath = (root: string, pvc: PvcUri): string => {
  const base = root.replace(/\/+$/, '');
  return pvc.path === '' ? base || '/' : `${base}/${pvc.path}`;
};
