/**
 * The process entry's first import: on a Node.js older than modelsync is built for, one line naming the Node.js it
 * needs and exit 2, before a module that needs the newer one is loaded (on Node 20 `--help` died with a TypeError
 * from `enableCompileCache` and its stack). Node 24 is what `engines` and the image name.
 */
const requiredMajor = 24;

const major = Number(process.versions.node.split('.')[0]);
if (!(major >= requiredMajor)) {
  process.stderr.write(
    `modelsync needs Node.js ${requiredMajor} or later; this is Node.js ${process.versions.node} (${process.execPath})\n`,
  );
  process.exit(2);
}

export {};
