/**
 * The flags modelsync no longer takes (issue 28; docs/operating.md, "Flags removed"): given as a flag or as its env
 * var, each is a usage error naming it, not an unknown flag, nor an env var silently ignored.
 */
export const removedFlags = [
  { flag: '--settle-ms', env: 'MODELSYNC_SETTLE_MS' },
  { flag: '--http-request-timeout-ms', env: 'MODELSYNC_HTTP_REQUEST_TIMEOUT_MS' },
  { flag: '--http-idle-timeout-ms', env: 'MODELSYNC_HTTP_IDLE_TIMEOUT_MS' },
  { flag: '--http-status-page-size', env: 'MODELSYNC_HTTP_STATUS_PAGE_SIZE' },
] as const;
