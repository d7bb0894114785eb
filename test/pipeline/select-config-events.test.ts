import { announcesNewContent, isSwapStep, selectConfigEvents } from '../../src/pipeline/select-config-events';
import type { FsEvent } from '../../src/ports';
import { runMarbles } from '../helpers/marbles';

const ev = (event: string, name: string): FsEvent => ({ event, name });

describe('isSwapStep', () => {
  it("is fs.watch's rename of a kubelet version dir or of the ..data_tmp link, not of ..data or models.json", () => {
    expect(isSwapStep(ev('rename', '..2026_11_30_00_00_00.123'))).toBe(true);
    expect(isSwapStep(ev('rename', '..data_tmp'))).toBe(true);
    expect(isSwapStep(ev('rename', '..data'))).toBe(false);
    expect(isSwapStep(ev('rename', 'models.json'))).toBe(false);
    // chokidar's polling may miss `..data`: its version-dir events still lead a read.
    expect(isSwapStep(ev('addDir', '..2026_11_30_00_00_00.123'))).toBe(false);
  });
});

describe('selectConfigEvents', () => {
  it('keeps ..data swaps, kubelet version dirs, models.json changes, ready and events of the dir itself', () =>
    runMarbles(({ cold, expectObservable }) => {
      const events = {
        a: ev('addDir', '..2026_11_30_00_00_00.123'),
        b: ev('change', '..data'),
        c: ev('change', 'models.json'),
        d: ev('unlinkDir', '..2026_11_30_00_00_00.122'),
        e: ev('ready', ''),
        f: ev('add', '4913'),
        g: ev('unlinkDir', ''),
        h: ev('change', 'other.conf'),
      };
      expectObservable(cold('abcdefgh|', events).pipe(selectConfigEvents())).toBe('abcde-g-|', events);
    }));

  it('completes without emitting when the source is empty', () =>
    runMarbles(({ cold, expectObservable }) => {
      expectObservable(cold<FsEvent>('|').pipe(selectConfigEvents())).toBe('|');
    }));

  it('passes a watcher error through', () =>
    runMarbles(({ cold, expectObservable }) => {
      const events = { b: ev('change', '..data') };
      expectObservable(cold('b#', events).pipe(selectConfigEvents())).toBe('b#', events);
    }));

  it('unsubscribes from the source when the consumer unsubscribes', () =>
    runMarbles(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('b-b-b-b', { b: ev('change', '..data') });
      expectObservable(source.pipe(selectConfigEvents()), '^--!').toBe('b-b', { b: ev('change', '..data') });
      expectSubscriptions(source.subscriptions).toBe('^--!');
    }));
});

describe('announcesNewContent', () => {
  it.each([
    [{ event: 'change', name: '..data' }, true],
    [{ event: 'add', name: '..data' }, true],
    [{ event: 'change', name: 'models.json' }, true],
    [{ event: 'unlink', name: 'models.json' }, true],
    [{ event: 'addDir', name: '..2026_11_30_15_00_00.123' }, false],
    [{ event: 'ready', name: '' }, false],
    [{ event: 'change', name: 'other.json' }, false],
  ] as const)('%j → %s', (event, expected) => {
    expect(announcesNewContent(event)).toBe(expected);
  });
});
