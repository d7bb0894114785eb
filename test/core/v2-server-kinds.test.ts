/** The one list of V2 server kinds: `--server-kind` offers each, and a server's metadata name picks one. */
import { serverKinds } from '../../src/core/flags/flag-table';
import { kindOfServerName, v2ServerKinds } from '../../src/core/v2-server-kinds';
import { v2Dialects } from '../../src/model-server/v2-dialect';

describe('v2ServerKinds', () => {
  it('are what --server-kind offers besides auto, each with its dialect', () => {
    expect(serverKinds).toEqual(['auto', ...v2ServerKinds]);
    for (const kind of v2ServerKinds) expect(v2Dialects[kind].kind).toBe(kind);
  });
});

describe('kindOfServerName', () => {
  it.each(v2ServerKinds)('takes the metadata name %s as that kind', (kind) => {
    expect(kindOfServerName(kind)).toBe(kind);
  });

  it.each([undefined, 'Triton', 'torchserve', 42, ['triton']])('takes %p as generic', (name) => {
    expect(kindOfServerName(name)).toBe('generic');
  });
});
