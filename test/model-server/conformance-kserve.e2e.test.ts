/**
 * The conformance suite against the KServe 0.21 model server (its Python server with our launcher, run as deploy/overlays/kserve
 * runs it), and the same scenarios against the V2 stand-in playing KServe: they must agree.
 */
import { conformanceScenarios } from './conformance/scenarios';
import { probeBoth } from './conformance/probe';
import { realTarget, standInTarget } from './conformance/targets';

jest.setTimeout(180_000);

describe('the KServe 0.21 model server', () => conformanceScenarios('kserve', realTarget));
describe('the stand-in playing KServe', () => conformanceScenarios('kserve', standInTarget));

describe('the stand-in held to KServe', () => {
  it('answers the probe exchanges as the real server does (codes, content types, bodies)', async () => {
    const { real, standIn } = await probeBoth('kserve', realTarget, standInTarget);
    expect(standIn).toEqual(real);
  });
});
