/** The notes the parallel-download suite writes beside its figures: how each row was run and how to read it. */

/** What the notes quote of the suite's settings. */
export interface NotesSettings {
  readonly runsPerTool: number;
  readonly perConnectionBytesPerSecond: number;
  readonly totalBytesPerSecond: number;
}

export const notesOf = (
  objectBytes: number,
  { runsPerTool, perConnectionBytesPerSecond, totalBytesPerSecond }: NotesSettings,
): string[] => [
  `Times: modelsync from its spawn (node src/cli.js with the image's Node.js flags, sync mode, --log-level warn) to ` +
    "the V2 stand-in's load request, so its start-up (the start-up row) is in every figure; aria2c and rclone " +
    `from spawn to exit. MB/s = ${objectBytes} bytes / 10^6 / median seconds over ${runsPerTool} interleaved runs; ` +
    'each copy is checked (size, and every MiB stamped with its index in its place). No fsync for any tool; ' +
    'every run starts with the disk settled (sync), so none pays for write-back another left.',
  `The relay (bench/relay.ts, a child process of its own) holds what each connection gets to ` +
    `${perConnectionBytesPerSecond / 1e6} MB/s and all of them to ${totalBytesPerSecond / 1e6} MB/s (token ` +
    'buckets refilled every 4 ms, the upstream paused when one is empty); MiBRelayed counts what it sent to ' +
    'clients, headers included; connections is how many it accepted. The calibration rows are curl -r over it.',
  'Peers: aria2c -x 8 -s 8 -k 1M --file-allocation=none (its default, prealloc, writes the file with zeros ' +
    'first), and rclone copy --multi-thread-streams 8 --multi-thread-cutoff 1M (:http: with --http-url, and :s3: ' +
    "with flags; over S3 rclone also checks the copy's MD5 against the ETag, part of its time). The ratio takes " +
    'the faster of the two (median seconds). S3 is s3rver (signatures not checked), running for its row only; ' +
    'aria2c fetches its object by plain URL.',
  "Row 5 cuts the agent's second connection (its first ranged one) half a part in (as the plan sizes parts for 8 streams) " +
    'and counts the bytes relayed; partMiB is the longest range the source answered in that run (the object ' +
    "when it was fetched in one stream). An uncut download relays a few MiB over the object: the agent's first " +
    'GET is a plain one whose body serves the first part and is dropped at its end, with bytes in flight.',
];
