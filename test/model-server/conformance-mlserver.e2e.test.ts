/**
 * The conformance suite against MLServer 1.7.1 with mlserver-sklearn (run as deploy/overlays/mlserver
 * runs it), and the same scenarios against the V2 stand-in playing MLServer: they must agree.
 */
import { conformanceSuite } from './conformance/suite';

conformanceSuite('mlserver', 'MLServer 1.7.1', 'MLServer');
