/** pvcStorage: the StorageProvider for `pvc://<claim>/<path>`, read from where the pod mounts the claim. */
import { lstat } from 'node:fs/promises';
import * as E from 'fp-ts/Either';
import { permanentError } from '../../core/errors';
import { parsePvcUri, pvcLocalPath } from '../../core/pvc-uri';
import { redactUri } from '../../core/storage-uri';
import type { StorageProvider } from '../../ports';
import type { DownloadLimits } from '../download-limits';
import { fsError, isMissing } from '../../fs';
import type { LocalModelFiles } from '../../core/storage-choices';
import { copyLocalModel, localSettings } from './local-storage';

/** Where the claim is mounted and what one model may take. */
export interface PvcStorageOptions {
  /** The claim's mount point (KServe's `/mnt/pvc`). */
  readonly root: string;
  /** The model cap and archive caps (default `defaultDownloadLimits`). */
  readonly limits?: DownloadLimits;
  /** What the user calls `root`, named in a refusal (the CLI's flag; default `root`). */
  readonly rootName?: string;
  /** Copied (the default) or linked: `LocalStorageOptions.files`. */
  readonly files?: LocalModelFiles;
}

/**
 * Serves `pvc://<claim>/<path>` as KServe's webhook maps it: `<root>/<path>`, the claim being the one volume mounted
 * at `root`. It is copied or linked as a local path is (`copyLocalModel`), `root` its only allowed root. A URI that is no pvc
 * URI, or leaves the root, is `invalid-uri`; a root that is not there is `not-found`, naming `rootName`.
 */
export const pvcStorage = ({
  root,
  limits,
  rootName = 'root',
  files,
}: PvcStorageOptions): StorageProvider => {
  const settings = localSettings({
    roots: [root],
    rootsName: rootName,
    ...(limits ? { limits } : {}),
    ...(files ? { files } : {}),
  });
  return {
    schemes: ['pvc'],
    download: async (uri, targetDir, signal, _progress, request) => {
      const pvc = parsePvcUri(uri);
      if (E.isLeft(pvc)) throw permanentError('invalid-uri', pvc.left);
      try {
        await lstat(root);
      } catch (cause) {
        const shown = redactUri(uri);
        throw isMissing(cause)
          ? permanentError(
              'not-found',
              `${shown}: no claim is mounted at ${root} (${rootName}): it does not exist`,
              cause,
            )
          : fsError(`reading ${root} for ${shown}`, cause);
      }
      await copyLocalModel(settings, pvcLocalPath(root, pvc.right), targetDir, signal, request?.select);
    },
  };
};
