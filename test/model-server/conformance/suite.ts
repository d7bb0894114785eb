/**
 * The whole conformance suite for one server kind: the scenarios against the real server and against the stand-in
 * playing it, and the probe that holds the stand-in to the server. One test file per kind calls it, so jest runs
 * the kinds side by side.
 */
import type { RealServerKind } from '../../real-servers/paths';
import { probeBoth } from './probe';
import { conformanceScenarios } from './scenarios';
import { realTarget, standInTarget } from './targets';

/** `server`: the real server's name in the test titles ("Triton 2.51"); `short`: the kind's ("Triton"). */
export const conformanceSuite = (kind: RealServerKind, server: string, short: string): void => {
  jest.setTimeout(180_000);
  describe(server, () => conformanceScenarios(kind, realTarget));
  describe(`the stand-in playing ${short}`, () => conformanceScenarios(kind, standInTarget));
  describe(`the stand-in held to ${short}`, () => {
    it('answers the probe exchanges as the real server does (codes, content types, bodies)', async () => {
      const { real, standIn } = await probeBoth(kind, realTarget, standInTarget);
      expect(standIn).toEqual(real);
    });
  });
};
