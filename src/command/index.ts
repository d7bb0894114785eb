/** The command line: arguments to a mode (dry run, one-shot, sync), the graceful stop, the version. */
export { dryRunMode, type Output, syncMode } from './modes';
export { oneShotMode } from './one-shot-mode';
export { parseArgs, type ParsedArgs } from './parse-args';
export { initializerMode, type DownloadPair } from './initializer-mode';
