/** The HTTP surface part of the flag table: where it listens, its connection bound, the stall window. */
import type { FlagEntry } from './flag-spec';
import { hostAddress, integerIn } from './setting-codecs';

/** The surface's flags, in `--help` order (spread into `flagTable`). */
export const surfaceFlags = {
  httpPort: {
    arg: 'port',
    default: '9081',
    help: 'port of the HTTP surface (on every interface unless `--http-host`): `/healthz`, `/readyz`, `/metrics`, `/status`; 0 = off',
    codec: integerIn('HttpPort', 0, 65_535),
  },
  httpHost: {
    arg: 'address',
    help: 'address the HTTP surface binds (`127.0.0.1`, `::1`, the pod IP); default every interface, where the kubelet probes the pod IP',
    codec: hostAddress,
    optional: true,
  },
  httpMaxConnections: {
    arg: 'n',
    default: '64',
    help: 'connections the HTTP surface holds at once; one more evicts the oldest not being answered (idle, still sending its head, or draining after its answer), or else takes one of 16 more kept for what the surface answers itself, or is closed',
    codec: integerIn('HttpMaxConnections', 4, 65_535),
  },
  watchStallMs: {
    arg: 'ms',
    default: '60000',
    help: '`/healthz` answers 503 once the config watch has made no progress for this long while the config dir exists, or the event loop has not turned for this long',
    codec: integerIn('WatchStallMs', 500, 86_400_000),
  },
} as const satisfies Readonly<Record<string, FlagEntry>>;
