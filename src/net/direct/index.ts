/** Direct reads: GETs whose length-framed bodies go from the socket straight into the reader's buffers. */
export { DirectBody, isSinkReadable, withFailures, type SinkReadable } from './direct-body';
export { DirectClient, type DirectRequest, type DirectResponse, type DirectTls } from './direct-client';
export { DirectTimeout, type ByteSink } from './direct-connection';
