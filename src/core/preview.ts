/** previewValue: a value from models.json as a reader of an error line should see it: short, and without secrets. */
import { previewJson } from './json/json';
import { redactUri } from './storage-uri';

/**
 * `value` as JSON in at most `maxChars` characters, every string in it stripped of URI user info and query (where
 * signed URLs carry their credentials): a storage URI pasted into the wrong field must not reach the log whole.
 */
export const previewValue = (value: unknown, maxChars = 80): string =>
  value === undefined ? 'nothing' : previewJson(value, maxChars, redactUri);
