/** The `download progress` log line, the same for the agent's downloads and the storage initializer's. */

export const downloadProgressMessage = 'download progress';

/** What a running download's line says of it (from a `DownloadProgress`, src/ports.ts). */
export const downloadProgressFields = (progress: {
  readonly bytes: number;
  readonly totalBytes?: number | undefined;
  readonly bytesPerSecond: number;
  readonly etaSeconds?: number | undefined;
}) => {
  const { bytes, totalBytes, bytesPerSecond, etaSeconds } = progress;
  return { bytes, totalBytes, bytesPerSecond, etaSeconds };
};
