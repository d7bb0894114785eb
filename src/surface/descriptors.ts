/** Liveness that sees the process out of file descriptors: then no config read, download or connection works. */
import { closeSync, openSync } from 'node:fs';
import type { Liveness } from './surface-state';

const exhausted = new Set(['EMFILE', 'ENFILE']);

/**
 * Why this process cannot open a file now (EMFILE: its own limit; ENFILE: the system's), or undefined when it
 * can. Opening /dev/null asks the kernel itself, whoever holds the descriptors (held connections, a leak, the
 * watcher): the agent past its limit failed reading models.json while /healthz said 200.
 */
export const descriptorExhaustion = (): string | undefined => {
  try {
    closeSync(openSync('/dev/null', 'r'));
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    return exhausted.has(code)
      ? `the process cannot open a file: out of file descriptors (${code})`
      : undefined;
  }
};

/** `liveness`, failing first while the process is out of file descriptors (the kubelet restarts it). */
export const withDescriptors =
  (liveness: () => Liveness, exhaustion: () => string | undefined = descriptorExhaustion) =>
  (): Liveness => {
    const reason = exhaustion();
    return reason === undefined ? liveness() : { ok: false, reason };
  };
