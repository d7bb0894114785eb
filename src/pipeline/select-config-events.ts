/** selectConfigEvents: keeps the config-dir events that can mean models.json changed. */
import { filter, type MonoTypeOperatorFunction } from 'rxjs';
import { configFileName, dataLinkName } from '../core/config-files';
import type { FsEvent } from '../ports';

const matters = ({ event, name }: FsEvent): boolean =>
  event === 'ready' || name === '' || name.startsWith('..') || name === configFileName;

/**
 * Keeps kubelet's `..data` swaps and the rest of its reserved `..` names, any change to a plain `models.json`
 * (written in place, renamed over, deleted, re-created), the dir itself appearing or going, and `ready` (a watch
 * was (re)armed: read what is there now). Why the `..<timestamp>` dirs: chokidar drops a second `change ..data`
 * within 50 ms, but every swap removes a differently named old version dir right after it, so a quick second
 * swap is still seen at once. Editors' temp files and other keys are noise.
 */
export const selectConfigEvents = (): MonoTypeOperatorFunction<FsEvent> => filter(matters);

/**
 * True for the events that say new content is in place: kubelet's `..data` swap and a write of a plain
 * `models.json`. coalesceBursts reads at them at once (its `isDirect`); the rest are paced.
 */
export const announcesNewContent = ({ name }: FsEvent): boolean =>
  name === dataLinkName || name === configFileName;
