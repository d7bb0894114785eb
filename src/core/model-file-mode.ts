/**
 * The mode a model's file gets in the model dir, from the mode its source gave it (a tar entry's, a local file's):
 * readable by all, its owner's and execute bits kept, setuid/setgid/sticky and group/other write dropped. The model
 * server reads the model dir as another user (deploy/base: modelsync 65532, the server 1000): a file packed or kept
 * 0600 landed unreadable there, and its load failed. A zip's files are 0644 alike.
 */
export const modelFileMode = (sourceMode: number): number => (sourceMode & 0o755) | 0o444;
