/**
 * undici-core: the parts of undici modelsync calls (its dispatchers, `request`, its errors), loaded without undici's
 * index, which also loads fetch, WebSocket, EventSource, the caches, the mocks and every interceptor: measured on
 * Node 24, the index takes 109 modules, +5.4 MiB of heap and +31 MiB of RSS; these parts 29 modules, +2.7 MiB and
 * +17 MiB. A sidecar idles on every model pod: that is memory each pod pays for nothing.
 *
 * undici 8 has no `exports` map, so its files are reachable; the version is pinned to its patch releases
 * (package.json `~`), and `test/net/undici-core.test.ts` checks each part is the very one the index exports.
 *
 * Its HTTP/2 session code is loaded at the first connection that negotiates h2 (an https server offering it), not
 * at start: its file loads node:http2, and that loads node:tls, ~2.7 MiB of RSS an agent on http storage and a
 * plain model server never uses (`deferHttp2`).
 */
import { Module } from 'node:module';
import type * as Undici from 'undici';

/* eslint-disable @typescript-eslint/no-require-imports -- undici's own files, without its index (see above) */
/**
 * Puts a stand-in for undici's `client-h2.js` (one function, `connectH2(client, socket)`, which its client calls once
 * a TLS connection chose h2) in require's cache before the client loads it; the stand-in loads the real file at its
 * first call and hands on. Nothing changes if the file was loaded already (undici's index came first), or where
 * require has no cache of its own (jest's registry): the real file then serves from the start.
 */
const deferHttp2 = (): void => {
  const file = require.resolve('undici/lib/dispatcher/client-h2.js');
  if (require.cache[file] !== undefined) return;
  type ConnectH2 = (...args: unknown[]) => unknown;
  let real: ConnectH2 | undefined;
  const standIn = new Module(file, module);
  standIn.filename = file;
  standIn.loaded = true;
  standIn.exports = (...args: unknown[]): unknown => {
    if (real === undefined) {
      delete require.cache[file];
      real = require(file) as ConnectH2;
    }
    return real(...args);
  };
  require.cache[file] = standIn;
};
deferHttp2();

const DispatcherClass = require('undici/lib/dispatcher/dispatcher') as typeof Undici.Dispatcher;
const api = require('undici/lib/api') as Pick<Undici.Dispatcher, 'request'>;
const global = require('undici/lib/global') as { getGlobalDispatcher: typeof Undici.getGlobalDispatcher };
const util = require('undici/lib/core/util') as { parseURL: (url: URL) => URL };
export const Agent = require('undici/lib/dispatcher/agent') as typeof Undici.Agent;
export type Agent = Undici.Agent;
export const ProxyAgent = require('undici/lib/dispatcher/proxy-agent') as typeof Undici.ProxyAgent;
export type ProxyAgent = Undici.ProxyAgent;
export const errors = require('undici/lib/core/errors') as typeof Undici.errors;
/* eslint-enable @typescript-eslint/no-require-imports */

// What undici's index does once: every dispatcher gets request() (and stream, pipeline, upgrade, connect).
Object.assign(DispatcherClass.prototype, api);

type RequestOptions = Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  readonly method?: Undici.Dispatcher.HttpMethod;
  readonly dispatcher?: Undici.Dispatcher;
};

/**
 * undici's `request(url, options)` for a parsed URL, as its index makes it: the URL checked by undici (an http(s) URL
 * with a valid port, else InvalidArgumentError), the request sent to `options.dispatcher` (default undici's global
 * one) with its origin and path; GET unless a method is given (the index would make a request with a body a PUT:
 * every caller here names its method).
 */
export const request = (
  url: URL,
  { dispatcher = global.getGlobalDispatcher(), method = 'GET', ...options }: RequestOptions,
): Promise<Undici.Dispatcher.ResponseData> => {
  const checked = util.parseURL(url);
  return dispatcher.request({
    ...options,
    origin: checked.origin,
    path: `${checked.pathname}${checked.search}`,
    method,
  });
};

export type { Dispatcher } from 'undici';
