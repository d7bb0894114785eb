/**
 * The choices of storage flags that storage names too: one list each, for the flag's codec and `--help`, and the
 * type storage takes, so that a choice added here is both offered and handled.
 */

/** How S3 buckets are addressed: `auto` decides by the endpoint (see `--s3-addressing`). */
export const s3AddressingStyles = ['auto', 'path', 'virtual'] as const;
export type S3Addressing = (typeof s3AddressingStyles)[number];

/** How a local or `pvc://` model's files reach the model dir (see `--local-model-files`). */
export const localModelFileModes = ['copy', 'link'] as const;
export type LocalModelFiles = (typeof localModelFileModes)[number];
