/** selectConfigEvents: keeps the config-dir events that can mean models.json changed. */
import { filter, type MonoTypeOperatorFunction } from 'rxjs';
import type { FsEvent } from '../ports';

/** The kubelet's published-version symlink; a ConfigMap update is its atomic re-pointing. */
export const dataLinkName = '..data';
export const configFileName = 'models.json';

const matters = ({ event, name }: FsEvent): boolean =>
  event === 'ready' || name === '' || name === dataLinkName || name === configFileName;

/**
 * Keeps kubelet `..data` swaps, any change to a plain `models.json` (written in place, renamed over, deleted,
 * re-created), the dir itself appearing or going, and `ready` (a watch was (re)armed: read what is there now).
 * Kubelet's `..<timestamp>` dirs, `..data_tmp` and editors' temp files are noise.
 */
export const selectConfigEvents = (): MonoTypeOperatorFunction<FsEvent> => filter(matters);
