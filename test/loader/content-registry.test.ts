/** Tests of the content registry: which models are sources of which identity, most recent first, within bounds. */
import { createContentRegistry } from '../../src/loader/content-registry';
import { name } from '../helpers/fixtures';

const [a, b, c, d] = [name('a'), name('b'), name('c'), name('d')];

describe('createContentRegistry', () => {
  it('names no source for an identity it never saw', () => {
    expect(createContentRegistry().sources('etag-1')).toEqual([]);
  });

  it('names the models installed from an identity, most recently installed first', () => {
    const registry = createContentRegistry();
    registry.installed(a, 'etag-1');
    registry.installed(b, 'etag-1');
    registry.installed(c, 'etag-2');

    expect(registry.sources('etag-1')).toEqual([b, a]);
    expect(registry.sources('etag-2')).toEqual([c]);
  });

  it('moves a model to its new identity when it is installed again', () => {
    const registry = createContentRegistry();
    registry.installed(a, 'etag-1');
    registry.installed(b, 'etag-1');
    registry.installed(a, 'etag-2');

    expect(registry.sources('etag-1')).toEqual([b]);
    expect(registry.sources('etag-2')).toEqual([a]);
  });

  it('drops a model installed from content of no known identity', () => {
    const registry = createContentRegistry();
    registry.installed(a, 'etag-1');
    registry.installed(a, undefined);

    expect(registry.sources('etag-1')).toEqual([]);
    expect(registry.size()).toBe(0);
  });

  it('forgets a removed model, and the identity with its last source', () => {
    const registry = createContentRegistry();
    registry.installed(a, 'etag-1');
    registry.installed(b, 'etag-1');

    registry.forget(a);
    expect(registry.sources('etag-1')).toEqual([b]);
    registry.forget(b);
    registry.forget(c); // never installed: nothing happens
    expect(registry.size()).toBe(0);
  });

  it('keeps only the most recent sources of an identity', () => {
    const registry = createContentRegistry({ identities: 10, sourcesPerIdentity: 2 });
    for (const model of [a, b, c]) registry.installed(model, 'etag-1');

    expect(registry.sources('etag-1')).toEqual([c, b]);
    // The dropped one is forgotten whole: installing it elsewhere leaves the others alone.
    registry.installed(a, 'etag-2');
    expect(registry.sources('etag-1')).toEqual([c, b]);
  });

  it('forgets the least recently used identity past its bound, a look-up counting as a use', () => {
    const registry = createContentRegistry({ identities: 2, sourcesPerIdentity: 4 });
    registry.installed(a, 'etag-1');
    registry.installed(b, 'etag-2');
    registry.sources('etag-1');
    registry.installed(c, 'etag-3');

    expect(registry.size()).toBe(2);
    expect(registry.sources('etag-2')).toEqual([]);
    expect(registry.sources('etag-1')).toEqual([a]);
    expect(registry.sources('etag-3')).toEqual([c]);
    // b went with its identity: installing it again is a fresh start, not a move.
    registry.installed(d, 'etag-1');
    expect(registry.sources('etag-1')).toEqual([d, a]);
  });

  it('stays within its bounds whatever is installed', () => {
    const registry = createContentRegistry({ identities: 50, sourcesPerIdentity: 3 });
    for (let i = 0; i < 5000; i++) registry.installed(name(`k${i}`), `shared-${i % 10}`);
    for (let i = 0; i < 10; i++) expect(registry.sources(`shared-${i}`)).toHaveLength(3);
    for (let i = 0; i < 5000; i++) registry.installed(name(`m${i}`), `etag-${i % 40}`);
    for (let i = 0; i < 5000; i++) registry.installed(name(`n${i}`), `other-${i}`);

    expect(registry.size()).toBe(50);
    expect(registry.sources('etag-0')).toEqual([]);
    for (let i = 4950; i < 5000; i++) expect(registry.sources(`other-${i}`)).toEqual([name(`n${i}`)]);
  });
});
