/**
 * A globalTeardown for the e2e project: kills the real servers of test processes that died without stopping
 * them (each test process also kills its own at exit), and removes their shm files and temp dirs.
 */
import { sweepStaleServers } from './servers';

export default function globalTeardown(): void {
  sweepStaleServers();
}
