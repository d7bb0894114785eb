/** The shared floor for connections: the Network, one HTTP call, transport errors, boundedServer, the reverse proxy. */
export {
  decodeJsonText,
  discardBody,
  dropBody,
  errorBodyText,
  errorText,
  headerOf,
  httpCall,
  type HttpCallResponse,
  type ResponseBody,
  httpUrl,
  isOk,
  readCapped,
  readJson,
  readText,
  responseStatusError,
  statusError,
} from './http-call';
export { answerWithin } from './answer-within';
export { boundedServer, defaultServerLimits, type ServerLimits } from './bounded-server';
export { announcesBody, bodyUnread, endAnswer } from './early-answer';
export { type BodyPace } from './body-pace';
export { reverseProxy, type ReverseProxy, type ReverseProxyOptions } from './reverse-proxy';
export { holdSocket } from './socket-hold';
export { request, type Dispatcher } from './undici-core';
export { createNetwork, type Network, networkFrom, readCaBundle } from './network';
export { timeoutOf, transportError } from './transport-error';
export { aggressiveProbing, attemptProbe, containerProber, type ContainerProber } from './container-prober';
export { readChunks, withFailures, type ChunkTaken, type FlowingBody } from './flowing-body';
