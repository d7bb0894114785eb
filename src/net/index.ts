/**
 * The shared floor for connections: the one Network (proxies, CAs, keep-alive), one request with a deadline,
 * transport failures classified.
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
export { createNetwork, type Network, networkFrom, readCaBundle } from './network';
export { timeoutOf, transportError } from './transport-error';
