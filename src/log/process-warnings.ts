/** logProcessWarnings: the process's warnings (deprecations, an SDK's notices) as JSON log lines, not raw stderr text. */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';

type WarningListener = (warning: Error & { readonly code?: unknown }) => void;

/**
 * Takes Node's `warning` printer (plain text on stderr, which carries only JSON lines) off `target` and logs each
 * warning as one warn line, its stack only at debug or below. Returns what puts the printer back.
 */
export const logProcessWarnings = (log: Logger, target: EventEmitter = process): (() => void) => {
  const printers = target.listeners('warning') as WarningListener[];
  for (const printer of printers) target.off('warning', printer);
  const onWarning: WarningListener = (warning) => {
    const { name, message, code, stack } = warning;
    log.warn(
      {
        component: 'process',
        // Not `name`: every line already has the logger's.
        warning: name,
        ...(typeof code === 'string' ? { code } : {}),
        message,
        ...(log.isLevelEnabled('debug') ? { stack } : {}),
      },
      'process warning',
    );
  };
  target.on('warning', onWarning);
  return () => {
    target.off('warning', onWarning);
    for (const printer of printers) target.on('warning', printer);
  };
};
