/** The names kubelet and KServe give the files of a mounted model ConfigMap. */

/** The ConfigMap key (and so the file) that lists the models. */
export const configFileName = 'models.json';

/** The kubelet's published-version symlink; a ConfigMap update is its atomic re-pointing. */
export const dataLinkName = '..data';
