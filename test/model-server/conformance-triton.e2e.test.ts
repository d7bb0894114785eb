/**
 * The conformance suite against Triton 2.51 (the tritonserver of nvidia-pytriton 0.7.0, run as deploy/overlays/
 * triton runs it), and the same scenarios against the V2 stand-in playing Triton: they must agree.
 */
import { conformanceScenarios } from './conformance/scenarios';
import { probeBoth } from './conformance/probe';
import { realTarget, standInTarget } from './conformance/targets';

jest.setTimeout(180_000);

describe('Triton 2.51', () => conformanceScenarios('triton', realTarget));
describe('the stand-in playing Triton', () => conformanceScenarios('triton', standInTarget));

describe('the stand-in held to Triton', () => {
  it('answers the probe exchanges as the real server does (codes, content types, bodies)', async () => {
    const { real, standIn } = await probeBoth('triton', realTarget, standInTarget);
    expect(standIn).toEqual(real);
  });
});
