/**
 * The shared floor for connections: the one Network (proxies, CAs, keep-alive), one request with a deadline,
 * transport failures classified; the one way a port is served (boundedServer).
 */
export {
  decodeJsonText,
  discardBody,
  errorText,
  httpCall,
  type HttpCallResponse,
  httpUrl,
  isOk,
  readJson,
  readText,
  responseStatusError,
  statusError,
} from './http-call';
export { boundedServer, defaultServerLimits, type ServerLimits } from './bounded-server';
export { createNetwork, type Network, networkFrom, readCaBundle } from './network';
export { timeoutOf, transportError } from './transport-error';
