/**
 * The conformance suite against MLServer 1.7.1 with mlserver-sklearn (run as deploy/overlays/mlserver
 * runs it), and the same scenarios against the V2 stand-in playing MLServer: they must agree.
 */
import { conformanceScenarios } from './conformance/scenarios';
import { probeBoth } from './conformance/probe';
import { realTarget, standInTarget } from './conformance/targets';

jest.setTimeout(180_000);

describe('MLServer 1.7.1', () => conformanceScenarios('mlserver', realTarget));
describe('the stand-in playing MLServer', () => conformanceScenarios('mlserver', standInTarget));

describe('the stand-in held to MLServer', () => {
  it('answers the probe exchanges as the real server does (codes, content types, bodies)', async () => {
    const { real, standIn } = await probeBoth('mlserver', realTarget, standInTarget);
    expect(standIn).toEqual(real);
  });
});
