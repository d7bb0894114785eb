/** unansweredMounts: the mounts a watch found hung, each held until its question returns. */
import { holdUnanswered, unansweredMounts } from '../../src/fs';

describe('unansweredMounts', () => {
  it('lists a dir while any hold on it is kept, once, sorted; a release twice counts once', () => {
    const releaseB = holdUnanswered('/b');
    const releaseA = holdUnanswered('/a');
    const releaseAgain = holdUnanswered('/a');
    expect(unansweredMounts()).toEqual(['/a', '/b']);
    releaseA();
    releaseA();
    expect(unansweredMounts()).toEqual(['/a', '/b']);
    releaseAgain();
    releaseB();
    expect(unansweredMounts()).toEqual([]);
  });
});
