/** The shared floor for the file system: durable steps, no-follow reads and deletes, the free-space check. */
export {
  consume,
  forEachLimited,
  fsError,
  isMissing,
  isNoSpace,
  isTransientFsError,
  step,
  syncPath,
  writeNewFile,
} from './durable-fs';
export { spaceCheck, statfsFreeBytes, type SpaceCheck } from './free-space';
export { fileCopier, type CopyCounter, type FileCopier, type HeldFile } from './copy-held-file';
export { homeDir } from './home-dir';
export { holdUnanswered, unansweredMounts } from './unanswered-mounts';
export {
  mountWatch,
  mountWatches,
  type MountCheck,
  type MountWatch,
  type MountWatchLog,
} from './mount-watch';
export { readSmallFile, readSmallFileWithStats, readToEnd } from './small-file';
export { onRemoteFileSystem } from './remote-file-system';
export { installing, quick, quickNowhere, quickUnder, slowCreatesAbove, type Handle } from './quick-calls';
export { linkMissing } from './link-missing';
export { makeDirs } from './make-dirs';
export { lockFile, removeHeldLockFile, type HeldLock } from './file-lock';
export { entryKind } from '../core/entry-kind';
export {
  chmodNoFollow,
  fileSizes,
  fileStats,
  inRealDirs,
  isSameEntry,
  namingDirs,
  openDir,
  openListedDir,
  type OpenDir,
  readNoFollow,
  removeTree,
  withDir,
} from './no-follow';
export { listedFileSizes, syncListed } from './listed-files';
