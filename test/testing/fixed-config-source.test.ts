/** fixedConfigSource: a config that never changes reads the same every time, and its events end at once. */
import { either as E } from 'fp-ts';
import { lastValueFrom, toArray } from 'rxjs';
import { fixedConfigSource } from '../../src/testing/fixed-config-source';

describe('fixedConfigSource', () => {
  it('reads the given text, every time, and has no events', async () => {
    const source = fixedConfigSource('[]', '/cfg/models.json');
    expect(await lastValueFrom(source.read().pipe(toArray()))).toEqual([
      E.right({ file: '/cfg/models.json', text: '[]' }),
    ]);
    expect(await lastValueFrom(source.read())).toEqual(E.right({ file: '/cfg/models.json', text: '[]' }));
    expect(await lastValueFrom(source.events$.pipe(toArray()))).toEqual([]);
  });

  it('reads as a missing models.json when given no text', async () => {
    const read = await lastValueFrom(fixedConfigSource().read());
    expect(E.isLeft(read) && read.left).toMatchObject({ _tag: 'ReadFailed', code: 'ENOENT' });
    expect(E.isLeft(read) && read.left.file).toMatch(/models\.json$/);
  });
});
