/** The startAgent example: an integrator's operator spliced into the stock agent, against the V2 stand-in. */
import { runOnnxOnlyAgent } from '../../examples/onnx-only-agent';

describe('runOnnxOnlyAgent', () => {
  it('loads only the ONNX models, and Ready counts only them', async () => {
    expect(await runOnnxOnlyAgent()).toEqual({ loaded: ['a', 'c'], modelCount: 2 });
  });
});
