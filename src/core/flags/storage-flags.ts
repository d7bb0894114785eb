/** The storage flags of the flag table: download limits, object stores (S3, Azure Blob, GCS), CA bundle, progress. */
import * as t from 'io-ts';
import type { FlagEntry } from './flag-spec';
import {
  absolutePath,
  absolutePaths,
  byteCount,
  httpUrl,
  integerIn,
  nonEmpty,
  choiceOf,
} from './setting-codecs';

import { localModelFileModes, s3AddressingStyles } from '../storage-choices';

/** The storage part of the flag table, in `--help` order (spread into `flagTable`). */
export const storageFlags = {
  maxModelBytes: {
    arg: 'bytes',
    default: '256Gi',
    help: 'most bytes one model may take, downloaded and (an archive) expanded: `256Gi`, `500Mi` or a byte count; a bigger model fails for good',
    codec: byteCount('MaxModelBytes', 1, Number.MAX_SAFE_INTEGER),
  },
  maxArchiveRatio: {
    arg: 'n',
    default: '200',
    help: 'most an archive may expand per compressed byte, checked past its first 16 MiB (a zip or gzip bomb fails for good)',
    codec: integerIn('MaxArchiveRatio', 1, 1_000_000),
  },
  maxArchiveEntries: {
    arg: 'n',
    default: '10000',
    help: 'most entries (files, dirs, links) one archive may hold',
    codec: integerIn('MaxArchiveEntries', 1, 100_000_000),
  },
  maxModelFiles: {
    arg: 'n',
    default: '10000',
    help: 'most objects one model may list in an object store (S3, GCS, Azure Blob); a listing past it fails for good',
    codec: integerIn('MaxModelFiles', 1, 100_000_000),
  },
  minDownloadRate: {
    arg: 'bytes',
    default: '1Ki',
    help: 'bytes per second a download must average over every `--min-rate-window-ms`, or it is dropped and retried; 0 = no minimum',
    codec: byteCount('MinDownloadRate', 0, Number.MAX_SAFE_INTEGER),
  },
  minRateWindowMs: {
    arg: 'ms',
    default: '60000',
    help: 'the sliding window `--min-download-rate` is measured over',
    codec: integerIn('MinRateWindowMs', 100, 86_400_000),
  },
  localStorageRoots: {
    arg: 'dirs',
    default: '/mnt/pvc',
    help: 'comma-separated dirs a local storageUri must lie in once links are resolved (`/` = any; empty = none); /proc, /sys, /dev and pseudo filesystems are always refused',
    codec: absolutePaths('LocalStorageRoots'),
  },
  pvcMountRoot: {
    arg: 'dir',
    default: '/mnt/pvc',
    help: "where the claim of a `pvc://<claim>/<path>` storageUri is mounted (KServe's `/mnt/pvc`): `<path>` is read from under it as a local path is, links kept inside it; allowed whatever `--local-storage-roots` says",
    codec: absolutePath('PvcMountRoot'),
  },
  localModelFiles: {
    arg: 'how',
    default: 'copy',
    help: "how a local path's or `pvc://` model's files reach the model dir: `copy` = a copy (a clone where the file system makes one); `link` = a symlink to each file past 1 MiB where it lies, no byte copied, the smaller ones (a model's config files) copied (the model server must mount the volume at the same path, as KServe's own storage initializer expects); archives are always extracted",
    ...choiceOf('LocalModelFiles', localModelFileModes),
  },
  // Object stores: the generic downloader's bound, then S3. KServe's env names are read in storage/object-store/.
  storageConcurrency: {
    arg: 'n',
    default: '8',
    help: 'objects of one model downloaded at once from S3, GCS or Azure Blob',
    codec: integerIn('StorageConcurrency', 1, 256),
  },
  downloadStreams: {
    arg: 'n',
    default: '8',
    help: 'connections one big file (32 MiB or more, from a store that serves ranges) is fetched over, as ranged parts written in place (one, when the first alone brings 6 MiB in its first 60 ms); 1 = one stream',
    codec: integerIn('DownloadStreams', 1, 64),
  },
  maxDownloadStreams: {
    arg: 'n',
    default: '32',
    help: 'most storage connections carrying model bytes at once, across all files, parts and models (a file waits for one)',
    codec: integerIn('MaxDownloadStreams', 1, 1024),
  },
  s3Endpoint: {
    arg: 'url',
    help: "S3-compatible endpoint (MinIO, Ceph): `http://minio:9000`; default KServe's `AWS_ENDPOINT_URL`, or `S3_ENDPOINT` with `S3_USE_HTTPS`, else AWS",
    codec: httpUrl,
  },
  s3Region: {
    arg: 'name',
    help: "region S3 requests are signed for; default `AWS_DEFAULT_REGION`, `AWS_REGION`, else `us-east-1` (AWS redirects to the bucket's region are followed)",
    codec: nonEmpty,
  },
  s3Addressing: {
    arg: 'style',
    default: 'auto',
    help: "`path` (`endpoint/bucket/key`) or `virtual` (`bucket.endpoint/key`); `auto`: KServe's `S3_USER_VIRTUAL_BUCKET` if set, else path-style at a custom endpoint and virtual at AWS",
    ...choiceOf('S3Addressing', s3AddressingStyles),
  },
  s3Anonymous: {
    help: "send S3 requests unsigned (a public bucket); KServe's `awsAnonymousCredential=true` does too",
    codec: t.boolean,
  },
  azureBlobEndpoint: {
    arg: 'url',
    help: 'an endpoint whose URLs are Azure Blob Storage too: `<url>/<account>/<container>/<prefix>` (azurite) or `<account>.<url host>/<container>/<prefix>` (Azure Stack Hub); `https://<account>.blob.core.windows.net/…` always is',
    codec: httpUrl,
  },
  gcsEndpoint: {
    arg: 'url',
    help: 'the GCS JSON API endpoint `gs://` URIs are read from (an emulator, a private endpoint); default https://storage.googleapis.com',
    codec: httpUrl,
  },
  caBundle: {
    arg: 'file',
    help: 'PEM file of CA certificates trusted on top of the system roots by every storage client (https, S3, GCS, Azure) and the model server client',
    codec: nonEmpty,
  },
  progressIntervalMs: {
    arg: 'ms',
    default: '10000',
    help: 'how often a running download reports its bytes, total, rate and ETA: the `download progress` log line, and the figures of /status and the download gauges of /metrics; 0 = never',
    codec: integerIn('ProgressIntervalMs', 0, 3_600_000),
  },
} as const satisfies Readonly<Record<string, FlagEntry>>;
