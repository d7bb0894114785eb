/** selectConfigEvents: keeps the config-dir events that can mean models.json changed. */
import { filter, type MonoTypeOperatorFunction } from 'rxjs';
import { configFileName, dataLinkName } from '../core/config-files';
import type { FsEvent } from '../ports';

const matters = ({ event, name }: FsEvent): boolean =>
  event === 'ready' || name === '' || name.startsWith('..') || name === configFileName;

/**
 * Keeps kubelet's `..data` swaps and its other reserved `..` names (a quick second swap is seen by its differently
 * named `..<timestamp>` dir: docs/background.md), any change to a plain `models.json`, the dir itself appearing or
 * going, and `ready` (a watch was (re)armed: read what is there now); not editors' temp files or other keys.
 */
export const selectConfigEvents = (): MonoTypeOperatorFunction<FsEvent> => filter(matters);

/**
 * True for the events that say new content is in place: kubelet's `..data` swap and a write of a plain
 * `models.json`. coalesceBursts reads at them at once (its `isDirect`); the rest are paced.
 */
export const announcesNewContent = ({ name }: FsEvent): boolean =>
  name === dataLinkName || name === configFileName;

/**
 * True for the steps of a kubelet swap as `fs.watch` reports them (`rename` of the `..<timestamp>` dir and the
 * `..data_tmp` link): it reports every event, so the `..data` rename that ends the swap comes too, and a read at
 * these would only see the old version and hold that read back (measured: swap → load request). chokidar's
 * polling names its events otherwise (`addDir`, `change`), and may miss `..data`: its steps still lead a read.
 */
export const isSwapStep = ({ event, name }: FsEvent): boolean =>
  event === 'rename' && name.startsWith('..') && name !== dataLinkName;
