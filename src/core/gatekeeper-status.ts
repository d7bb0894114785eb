/**
 * An answer of whatever stands before the server, not of the server about the model's files: a redirect (not
 * followed: a proxy sending loads to https, to a login page), a 401 or 403 (an auth proxy: kube-rbac-proxy and
 * oauth2-proxy refuse with 403, as Triton's restricted API does; none of the four servers refuses a model's files
 * with it) or a 407 (a forward proxy wanting its own credentials). Set right, the same files may load.
 */
export const isGatekeeperStatus = (status: number | undefined): boolean =>
  status !== undefined &&
  ((status >= 300 && status < 400) || status === 401 || status === 403 || status === 407);
