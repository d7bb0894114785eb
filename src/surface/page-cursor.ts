/**
 * /status page cursors. `page.next` is the page's last model name, and the page goes out redacted: a name holding
 * `token=…` showed as `token=[REDACTED]`, which, sent back as `?after=`, sorts before the name it hid, and the
 * client got the same page for ever. Such a name goes sealed instead (AES-256-GCM under a key of this process), so
 * nothing the redaction hides shows in it, and `afterName` opens it; a cursor of another process (a restart) is
 * refused, and the client starts again from the first page.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { redact } from '../core/redact';

// No model name holds a NUL: a sealed cursor is never taken for a name, nor a name for one.
const mark = '\u0000';
const key = randomBytes(32);
const [ivBytes, tagBytes] = [12, 16];

/** `page.next` after the model `name`: the name, unless the redaction changes it on the page; then sealed. */
export const pageCursor = (name: string): string => {
  const shown = JSON.stringify(name);
  if (redact(shown) === shown) return name;
  // The nonce from the name: one name, one cursor (the same page text, redacted once), no nonce used for two.
  const iv = createHmac('sha256', key).update(name).digest().subarray(0, ivBytes);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const sealed = Buffer.concat([iv, cipher.update(name, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `${mark}${sealed.toString('hex')}`; // hex: no shape of a secret is made of it
};

/** The model name an `after` stands for (a name, or a `page.next`); undefined for a cursor this process did not make. */
export const afterName = (after: string): string | undefined => {
  if (!after.startsWith(mark)) return after;
  const hex = after.slice(mark.length);
  if (!/^(?:[0-9a-f]{2})+$/.test(hex) || hex.length / 2 < ivBytes + tagBytes) return undefined;
  const sealed = Buffer.from(hex, 'hex');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, ivBytes));
    decipher.setAuthTag(sealed.subarray(sealed.length - tagBytes));
    const body = sealed.subarray(ivBytes, sealed.length - tagBytes);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  } catch {
    return undefined; // not sealed here, or changed on the way
  }
};
