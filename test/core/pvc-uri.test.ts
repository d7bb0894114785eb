import { either as E } from 'fp-ts';
import { parsePvcUri, pvcLocalPath } from '../../src/core/pvc-uri';

describe('parsePvcUri', () => {
  it.each([
    ['pvc://claim/models/m1', { claim: 'claim', path: 'models/m1' }],
    ['pvc://claim', { claim: 'claim', path: '' }],
    ['pvc://claim/', { claim: 'claim', path: '' }],
    ['PVC://claim/m1', { claim: 'claim', path: 'm1' }],
    ['pvc://my.claim-2/a//b/./c/', { claim: 'my.claim-2', path: 'a/b/c' }],
    // As KServe's ParsePvcURI: taken as written, no decoding; `?` and `%` are path characters.
    ['pvc://claim/m%201?x', { claim: 'claim', path: 'm%201?x' }],
  ])('reads %s as KServe splits it', (uri, parsed) => {
    expect(parsePvcUri(uri)).toEqual(E.right(parsed));
  });

  it.each([
    ['s3://b/m', 'is not a pvc:// URI'],
    ['pvc://', 'names no claim'],
    ['pvc:///m1', 'names no claim'],
    ['pvc://Claim/m1', 'not a Kubernetes name'],
    ['pvc://user:secret@claim/m1', 'not a Kubernetes name'],
    [`pvc://${'a'.repeat(254)}/m1`, 'not a Kubernetes name'],
    ['pvc://claim/models/../../etc', "must not contain '..'"],
    ['pvc://claim/m\0', 'contains NUL'],
  ])('refuses %j: %s', (uri, why) => {
    const parsed = parsePvcUri(uri);
    expect(E.isLeft(parsed) && parsed.left).toContain(why);
  });

  it('never shows the user info of a URI it refuses', () => {
    const parsed = parsePvcUri('pvc://user:secret@claim/m1');
    expect(E.isLeft(parsed) && parsed.left).not.toContain('secret');
  });
});

describe('pvcLocalPath', () => {
  it.each([
    ['/mnt/pvc', 'models/m1', '/mnt/pvc/models/m1'],
    ['/mnt/pvc/', 'models/m1', '/mnt/pvc/models/m1'],
    ['/mnt/pvc', '', '/mnt/pvc'],
    ['/', 'm1', '/m1'],
    ['/', '', '/'],
  ])('puts %s and %j together as %s', (root, path, expected) => {
    expect(pvcLocalPath(root, { claim: 'c', path })).toBe(expected);
  });
});
