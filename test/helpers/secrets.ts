/**
 * Planted secrets and the checker that looks for them in everything a run produced: log lines, status events,
 * error messages, status documents, metrics. For every suite that wants to prove it leaks nothing.
 */
import { randomBytes } from 'node:crypto';

/** A secret planted in a run: a label for failure messages and the exact value. */
export interface PlantedSecret {
  readonly label: string;
  readonly value: string;
}

/** Where a planted secret was found, in which form, with a little context. */
export interface Leak {
  readonly secret: string;
  readonly form: string;
  readonly source: string;
  readonly excerpt: string;
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/**
 * Fresh secret values with the shapes real ones have, different on every call (so a leak can only come from
 * this run). `token` and `key` have no recognisable shape: only registration can hide them.
 */
export const secretValues = () => ({
  /** A password as it appears in `user:password@`. */
  password: `pw${hex(8)}`,
  /** An opaque API token (header values, TorchServe keys). */
  token: `tok${hex(12)}`,
  /** An AWS access key id. */
  awsKeyId: `AKIA${hex(8).toUpperCase()}`,
  /** An AWS secret access key (40 base64 characters). */
  awsSecretKey: randomBytes(30).toString('base64'),
  /** A SigV4 signature (64 hex digits). */
  amzSignature: hex(32),
  /** An Azure SAS signature (base64, so URL-encoded in a URL). */
  sasSignature: randomBytes(32).toString('base64'),
  /** A storage account key. */
  accountKey: randomBytes(48).toString('base64'),
  /** A GCS V4 signature. */
  googSignature: hex(32),
});

/**
 * The forms a secret takes in output: as it is, URL-encoded (in URLs, form bodies), JSON-escaped (inside JSON
 * text) and base64 (Basic auth, encoded blobs), each only when it differs from the plain value.
 */
export const secretForms = (
  value: string,
): ReadonlyArray<{ readonly form: string; readonly text: string }> => {
  const forms = [
    { form: 'exact', text: value },
    { form: 'url-encoded', text: encodeURIComponent(value) },
    { form: 'json-escaped', text: JSON.stringify(value).slice(1, -1) },
    { form: 'base64', text: Buffer.from(value).toString('base64') },
    { form: 'base64url', text: Buffer.from(value).toString('base64url') },
  ];
  return forms.filter((f, i) => i === 0 || forms.findIndex((g) => g.text === f.text) === i);
};

/** Every string in `value`: itself, or the keys and strings of an object, array, Map, Set or Error, deep. */
export const stringsIn = (value: unknown, into: string[] = [], seen = new Set<unknown>()): string[] => {
  if (typeof value === 'string') into.push(value);
  else if (typeof value === 'object' && value !== null && !seen.has(value)) {
    seen.add(value);
    if (value instanceof Error) {
      stringsIn([value.message, value.stack, value.cause], into, seen);
    }
    if (Array.isArray(value) || value instanceof Set) for (const item of value) stringsIn(item, into, seen);
    else if (value instanceof Map) for (const [key, item] of value) stringsIn([key, item], into, seen);
    else for (const [key, item] of Object.entries(value)) stringsIn([key, item], into, seen);
  }
  return into;
};

/**
 * Collects what runs produced, by source (`cli stderr`, `status events`, ...), and finds planted secrets in it.
 * `add` takes text or any value (every string in it is searched); `expectNoLeaks` fails listing each leak.
 */
export class SecretScan {
  private readonly texts: Array<{ readonly source: string; readonly text: string }> = [];

  constructor(private readonly secrets: ReadonlyArray<PlantedSecret>) {
    for (const { label, value } of secrets) {
      if (value.length < 6) throw new Error(`the planted secret ${label} is too short to search for`);
    }
  }

  /** Adds every string in `value` (a text, lines, log objects, events, errors) under `source`. */
  add(source: string, value: unknown): this {
    for (const text of stringsIn(value)) this.texts.push({ source, text });
    return this;
  }

  /** How many texts were added, and how many characters: a scan of nothing proves nothing. */
  get size(): { readonly texts: number; readonly chars: number } {
    return { texts: this.texts.length, chars: this.texts.reduce((sum, t) => sum + t.text.length, 0) };
  }

  /** Every place a planted secret appears, in any of its forms. */
  leaks(): Leak[] {
    const found: Leak[] = [];
    for (const { label, value } of this.secrets) {
      for (const { form, text: needle } of secretForms(value)) {
        for (const { source, text } of this.texts) {
          const at = text.indexOf(needle);
          if (at === -1) continue;
          const excerpt = text.slice(Math.max(0, at - 60), at + needle.length + 20);
          found.push({ secret: label, form, source, excerpt });
        }
      }
    }
    return found;
  }

  /** Fails with every leak (secret, form, source and context) when there is any. */
  expectNoLeaks(): void {
    const leaks = this.leaks();
    if (leaks.length === 0) return;
    const listed = leaks.map((l) => `- ${l.secret} (${l.form}) in ${l.source}: …${l.excerpt}…`);
    throw new Error(`${leaks.length} planted secret(s) leaked:\n${listed.join('\n')}`);
  }
}
