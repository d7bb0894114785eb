/** Direct reads: GETs whose length-framed bodies go from the socket straight into the reader's buffers. */
export { DirectBody, isSinkReadable, withFailures, type SinkReadable } from './direct-body';
export { DirectClient, type DirectRequest, type DirectResponse, type DirectTls } from './direct-client';
export { type ByteSink } from './byte-sink';
export { DirectTimeout } from './direct-errors';
