/**
 * The Pod a projected service account token was issued for: a bound token (the kubelet's, since Kubernetes 1.21)
 * names it in its `kubernetes.io` claim. Read, never verified: it is the pod's own mounted token, and only where
 * the agent's own Events go is taken from it.
 */
import { jsonObject } from './json/json-object';
import type { PodRef } from './kube-event';

/** A Kubernetes object name or namespace as the API server allows it (a DNS subdomain), or undefined. */
const nameOf = (value: unknown): string | undefined =>
  typeof value === 'string' && /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(value) ? value : undefined;

/** A uid as the API server writes it (a UUID), or undefined. */
const uidOf = (value: unknown): string | undefined =>
  typeof value === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(value)
    ? value
    : undefined;

/**
 * The Pod `token` (a JWT, trimmed) names in its claims, with its uid; undefined for a token that names none (a
 * legacy Secret-based token, or no JWT at all).
 */
export const serviceAccountPod = (token: string): PodRef | undefined => {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  let claims: unknown;
  try {
    // base64url (RFC 7515), unpadded: atob takes it as base64 once its two letters are swapped back.
    const bytes = Uint8Array.from(atob(payload.replace(/-/g, '+').replace(/_/g, '/')), (c) =>
      c.charCodeAt(0),
    );
    claims = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
  const kubernetes = jsonObject(jsonObject(claims)?.['kubernetes.io']);
  const pod = jsonObject(kubernetes?.['pod']);
  const [name, namespace, uid] = [
    nameOf(pod?.['name']),
    nameOf(kubernetes?.['namespace']),
    uidOf(pod?.['uid']),
  ];
  if (name === undefined || namespace === undefined) return undefined;
  return { name, namespace, ...(uid === undefined ? {} : { uid }) };
};
