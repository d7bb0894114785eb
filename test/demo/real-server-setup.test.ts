/** What `npm run demo -- --server <kind>` sets up before its story: that one server and its fixtures, nothing else. */
import { join } from 'node:path';
import { realServerSetup } from '../real-servers/global-setup';
import { cacheDir, realServerKinds, scriptsDir } from '../real-servers/paths';

describe('realServerSetup', () => {
  it.each(realServerKinds)(
    'installs %s and makes its fixtures, and no other server, when the demo runs it',
    (kind) => {
      expect(realServerSetup([kind]).map((step) => [step.step, step.kind])).toEqual([
        ['install', kind],
        ['fixtures', kind],
      ]);
    },
  );

  it('names the one server to install.sh, which installs all three when it is named none', () => {
    const [install] = realServerSetup(['mlserver']);
    expect(install!.command()).toEqual({
      file: 'bash',
      args: [join(scriptsDir, 'install.sh'), cacheDir, 'mlserver'],
    });
  });

  it("installs every server before making any fixtures for the tests' global setup", () => {
    expect(realServerSetup(realServerKinds).map((step) => [step.step, step.kind])).toEqual([
      ...realServerKinds.map((kind) => ['install', kind]),
      ...realServerKinds.map((kind) => ['fixtures', kind]),
    ]);
  });

  it('says of each step what it does and about how long it takes', () => {
    expect(realServerSetup(['triton']).map((step) => step.title)).toEqual([
      expect.stringMatching(/^installing triton into .+: the first time a few minutes and a few hundred MB/),
      expect.stringMatching(/^making the triton fixture models into .+ \(a few seconds\)$/),
    ]);
  });
});
