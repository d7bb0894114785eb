/**
 * The model dir (`ModelStore`, `LoadJournal`): staged installs swapped in whole, markers, start-up recovery, the
 * load journal; never a neighbour's link followed.
 */
export { loadJournal } from './load-journal';
export { modelDirStore } from './store';
export { openFreshStagingDir } from './staging-dir';
