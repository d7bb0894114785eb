/** homeDir: the user's home, found as the tools modelsync follows find it (kubectl, the AWS SDK, huggingface_hub). */
import { homedir } from 'node:os';
import type { Env } from '../core/env';

/**
 * HOME, else the user's home in the password database; undefined when neither has one (a uid the image does not
 * list, run without HOME), where Node's `os.homedir()` throws: the start must not end on it. The callers then keep
 * `~` as written, as Python's expanduser does, and find no file there.
 */
export const homeDir = (env: Env): string | undefined => {
  if (env['HOME'] !== undefined) return env['HOME'];
  try {
    return homedir();
  } catch {
    return undefined;
  }
};
