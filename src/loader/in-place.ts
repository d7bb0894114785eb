/** What a start finds in place, and the snapshot the first config is diffed against. */
import type { LoadJournal, ModelStore } from '../ports';
import type { InPlace } from '../core/in-place';

/** Recovers the model dir: what is installed, and which loads were never confirmed. */
export const recoverModelDir = async (
  store: ModelStore,
  journal: LoadJournal,
): Promise<Omit<InPlace, 'loaded'>> => ({
  onDisk: await store.recover(),
  unconfirmed: await journal.unconfirmed(),
});

/** Everything in place: the recovered model dir and `loaded`, the server's answer. */
export const findInPlace = async (
  store: ModelStore,
  journal: LoadJournal,
  loaded: ReadonlySet<string>,
): Promise<InPlace> => ({
  ...(await recoverModelDir(store, journal)),
  loaded,
});
