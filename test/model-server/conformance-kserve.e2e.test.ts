/**
 * The conformance suite against the KServe 0.21 model server (its Python server with our launcher, run as deploy/overlays/kserve
 * runs it), and the same scenarios against the V2 stand-in playing KServe: they must agree.
 */
import { conformanceSuite } from './conformance/suite';

conformanceSuite('kserve', 'the KServe 0.21 model server', 'KServe');
