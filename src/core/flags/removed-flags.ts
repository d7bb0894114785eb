/**
 * The flags modelsync no longer takes, each with its env var and what replaced it: given on the command line or
 * in the environment, one is a usage error naming it (not an unknown flag silently ignored as an env var would be).
 */
export const removedFlags = [
  {
    flag: '--settle-ms',
    env: 'MODELSYNC_SETTLE_MS',
    instead: "fixed at 100 ms; the library's settleMs setting still takes any value",
  },
  {
    flag: '--http-request-timeout-ms',
    env: 'MODELSYNC_HTTP_REQUEST_TIMEOUT_MS',
    instead: "fixed at 5 s; the library's SurfaceLimits.requestTimeoutMs still takes any value",
  },
  {
    flag: '--http-idle-timeout-ms',
    env: 'MODELSYNC_HTTP_IDLE_TIMEOUT_MS',
    instead: "fixed at 5 s; the library's SurfaceLimits.idleTimeoutMs still takes any value",
  },
  {
    flag: '--http-status-page-size',
    env: 'MODELSYNC_HTTP_STATUS_PAGE_SIZE',
    instead:
      "fixed at 500 models; a client asks for fewer with ?limit=, the library's SurfaceLimits.statusPageSize sets it",
  },
] as const;
