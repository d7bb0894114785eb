/** readCaBundle reads only a regular file of bounded size: a device, a FIFO or a huge file is refused, naming it. */
import { execFileSync } from 'node:child_process';
import { truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import * as E from 'fp-ts/Either';
import { readCaBundle } from '../../src/net';
import { useTempDir } from '../helpers/temp-dir';

describe('readCaBundle', () => {
  const tmp = useTempDir('ca-bundle-read');

  it('reads the certificates of a regular file', async () => {
    const file = path.join(tmp.path, 'ca.pem');
    await writeFile(file, rootCertificates.slice(0, 2).join('\n'));
    expect(E.map((pems: ReadonlyArray<string>) => pems.length)(readCaBundle(file))).toEqual(E.right(2));
  });

  // readFileSync read a device to its end, which /dev/zero has none of (the heap grew until the process died), and
  // blocked the start for good on a FIFO no one writes: AWS_CA_BUNDLE is a path from the environment.
  it('refuses a device and a FIFO without reading them, naming the file', () => {
    expect(readCaBundle('/dev/zero')).toEqual(
      E.left('cannot read the CA bundle /dev/zero: it is a character device, not a regular file'),
    );
    const fifo = path.join(tmp.path, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(readCaBundle(fifo)).toEqual(
      E.left(`cannot read the CA bundle ${fifo}: it is a FIFO (named pipe), not a regular file`),
    );
  });

  it('refuses a file over 16 MiB without reading it', async () => {
    const file = path.join(tmp.path, 'huge.pem');
    await writeFile(file, '');
    await truncate(file, 16 * 2 ** 20 + 1);
    expect(readCaBundle(file)).toEqual(
      E.left(`cannot read the CA bundle ${file}: it is ${16 * 2 ** 20 + 1} bytes, over ${16 * 2 ** 20}`),
    );
  });
});
