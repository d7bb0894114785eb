/**
 * The conformance suite against Triton 2.51 (the tritonserver of nvidia-pytriton 0.7.0, run as deploy/overlays/
 * triton runs it), and the same scenarios against the V2 stand-in playing Triton: they must agree.
 */
import { conformanceSuite } from './conformance/suite';

conformanceSuite('triton', 'Triton 2.51', 'Triton');
