/** packageVersion: modelsync's version, read once from package.json (`src/command/` and `dist/command/` both sit two levels below it). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The `version` of modelsync's package.json. */
export const packageVersion: string = (
  JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
).version;
