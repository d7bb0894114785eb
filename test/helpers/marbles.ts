/** Marble-test helpers: a TestScheduler that compares with jest's toEqual. */
import { TestScheduler, type RunHelpers } from 'rxjs/testing';

export const runMarbles = <T>(fn: (helpers: RunHelpers) => T): T =>
  new TestScheduler((actual, expected) => expect(actual).toEqual(expected)).run(fn);
