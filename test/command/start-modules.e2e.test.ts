/**
 * What the real process loads: a sidecar pays in heap and RSS for every module it loads, on every model pod, so what
 * only some models or settings need (the cloud SDKs, undici's fetch and the rest of its index, the zip reader, the
 * polling watcher, Node's TLS, HTTP/2 and zlib) is loaded at its first use, never at start.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { atomicWrite } from '../../src/testing/atomic-writer';
import { cliArgs, killAllCli, runCli } from '../helpers/cli-process';
import { modelsJson } from '../helpers/fixtures';
import { useHttpServers } from '../helpers/http-servers';
import { useTempDir } from '../helpers/temp-dir';
import { resyncWorld, type ResyncWorld } from '../integration/resync-world';

let world: ResyncWorld;
afterEach(async () => {
  await killAllCli();
  await world.close();
});
const tmp = useTempDir('start-modules');
const serve = useHttpServers();
beforeEach(async () => {
  world = await resyncWorld(tmp.path);
});

/**
 * A preload that writes the path of every module the process loaded, then Node's own modules it loaded
 * (`NativeModule <name>`), a line each, to `out` as it exits.
 */
const recordModules = (out: string): string => {
  const path = join(tmp.path, 'record-modules.js');
  writeFileSync(
    path,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, [...Object.keys(require.cache), ...process.moduleLoadList].join('\\n')));\n`,
  );
  return path;
};

/** The packages (or a package's files, `undici/index.js`) and Node's modules a sidecar on http models must not load. */
const notForHttpModels = [
  '/node_modules/undici/index.js',
  '/node_modules/undici/lib/web/',
  '/node_modules/@aws-sdk/',
  '/node_modules/@smithy/',
  '/node_modules/@azure/',
  '/node_modules/@google-cloud/',
  '/node_modules/@kubernetes/client-node/',
  '/node_modules/yauzl/',
  '/node_modules/tar/',
  '/node_modules/chokidar/',
  // Node's TLS (~3.5 MiB of RSS with node:https and the proxy agents), HTTP/2 (undici's h2 code loads it) and zlib.
  'NativeModule tls',
  'NativeModule https',
  'NativeModule http2',
  'NativeModule zlib',
];

describe('modelsync (the process): modules loaded', () => {
  it('syncs an http model with undici alone: no cloud SDK, no fetch, no archive reader, no polling watcher, no TLS', async () => {
    const { url } = await serve((_request, response) =>
      response.writeHead(200, { 'Content-Length': 4 }).end('weights'.slice(0, 4)),
    );
    atomicWrite(world.configDir, { 'models.json': modelsJson({ m: `${url}/m.bin` }) });
    const out = join(tmp.path, 'modules.txt');

    const result = await runCli(cliArgs(world.flags({ once: true })), {
      nodeFlags: ['--require', recordModules(out)],
      timeoutMs: 20_000,
    });

    expect(result.code).toBe(0);
    expect([...world.server().loaded]).toEqual(['m']);
    const loaded = readFileSync(out, 'utf8').split('\n');
    // The model came over http through undici's own dispatcher: the record is of a process that used it.
    expect(loaded.some((file) => file.endsWith('/node_modules/undici/lib/dispatcher/agent.js'))).toBe(true);
    expect(notForHttpModels.filter((part) => loaded.some((file) => file.includes(part)))).toEqual([]);
  }, 30_000);
});
