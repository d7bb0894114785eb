/** listingBounds: what a store's listing may say before modelsync stops believing it, the same for S3, GCS and Azure (docs/reliability.md, "Peer answers"). */
import { createHash } from 'node:crypto';
import { permanentError, type EffectError } from '../../core/errors';
import { hasLoneSurrogate } from '../../core/json/json';
import { tooLarge, type ListingCap } from '../download-limits';
import { jsonObject } from '../../core/json/json-object';
import type { ListedItem, ListingBounds, StoredObject } from './client';
import type { StorePressure } from '../store-pressure';

/** Longest object key any of the three stores allows (S3 and GCS 1,024 bytes, Azure 1,024 characters). */
const maxKeyBytes = 1024;

/** Longest page token believed (the stores' own are a few hundred characters). */
const maxTokenChars = 8192;

/** The permanent `invalid-response` failure of `what`: the store answered something no listing says. */
export const invalidListing = (what: string, why: string): EffectError =>
  permanentError('invalid-response', `${what}: the store's answer is not a listing: ${why}`);

const sizeOf = (size: unknown): number | undefined => {
  const value = typeof size === 'string' && /^\d{1,16}$/.test(size) ? Number(size) : size;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
};

/**
 * The listed item `index` of `what` as a StoredObject; a key that is no non-empty string of at most 1,024 bytes,
 * or a size that is no whole number of bytes, is the store's error (`invalid-response`, permanent: it would say
 * the same again), never a TypeError in a callback.
 */
const storedObject = (what: string, index: number, { key, size, version }: ListedItem): StoredObject => {
  if (typeof key !== 'string' || key === '' || Buffer.byteLength(key) > maxKeyBytes)
    throw invalidListing(what, `item ${index} has no key of 1 to ${maxKeyBytes} bytes`);
  if (hasLoneSurrogate(key)) throw invalidListing(what, `item ${index} has a key that is no valid text`);
  const bytes = sizeOf(size ?? 0);
  if (bytes === undefined)
    throw invalidListing(what, `item ${index} (${JSON.stringify(key)}) has no size in bytes`);
  const stamp = typeof version === 'number' ? String(version) : version;
  return { key, size: bytes, version: typeof stamp === 'string' ? stamp : '' };
};

/**
 * The objects of one listing page of `what`: `items` (the page's `noun`) must be a list, and each item, read by
 * `fields`, is checked (storedObject) and counted on `bounds`.
 */
export function* pageObjects(
  what: string,
  noun: string,
  items: unknown,
  bounds: ListingBounds,
  fields: (item: Readonly<Record<string, unknown>> | undefined) => ListedItem,
): Generator<StoredObject> {
  if (!Array.isArray(items)) throw invalidListing(what, `its ${noun} are not a list`);
  for (const item of items) yield bounds.object(what, fields(jsonObject(item)));
}

/** Pages with nothing in them a listing may give (GCS may, past many deleted objects), before it is not believed. */
export const maxEmptyPages = 100;

/**
 * The check of each next-page token (or URL) of a listing of `what`: one longer than `maxTokenChars`, or one given
 * before (a store paging in a circle), is `invalid-response`, permanent. It keeps digests, not the tokens: what a
 * listing holds stays small however long a store's tokens are (the S3, GCS and Azure listings and the Hub's tree).
 */
export const pageTokenCheck = (what: string) => {
  const seen = new Set<string>();
  return (page: number, token: string): void => {
    if (token.length > maxTokenChars)
      throw invalidListing(what, `page ${page} gave a next page of ${token.length} characters`);
    const digest = createHash('sha256').update(token).digest('base64');
    if (seen.has(digest))
      throw invalidListing(
        what,
        `page ${page} gave a next page it gave before (the listing goes in a circle)`,
      );
    seen.add(digest);
  };
};

/**
 * The bounds of one listing of `what` at `cap.maxModelFiles` objects: more objects is `too-large`; a page
 * token seen before (a store paging in a circle) or more than `maxEmptyPages` pages with nothing in them is
 * `invalid-response`; all permanent. So a listing always ends, having held at most `maxModelFiles` entries and
 * asked for at most `maxModelFiles + maxEmptyPages + 1` pages. Each page is asked through `store`'s pressure, when
 * given (ListingBounds.ask).
 */
export const listingBounds = (
  what: string,
  cap: ListingCap,
  store?: { readonly pressure: StorePressure; readonly signal: AbortSignal },
): ListingBounds => {
  const maxObjects = cap.maxModelFiles;
  const checkToken = pageTokenCheck(what);
  let objects = 0;
  let objectsAtLastPage = 0;
  let pages = 0;
  let emptyPages = 0;
  // Once the store answered this listing, a push-back is to a request in the middle of it.
  let answered = false;
  return {
    page: (nextToken) => {
      pages++;
      if (objects === objectsAtLastPage) emptyPages++;
      objectsAtLastPage = objects;
      if (nextToken === undefined) return;
      if (emptyPages > maxEmptyPages)
        throw invalidListing(what, `${emptyPages} pages with no objects in them, and still a next page`);
      checkToken(pages, nextToken);
    },
    object: (listing, item) => {
      const object = storedObject(listing, objects, item);
      if (++objects > maxObjects)
        throw tooLarge(what, `it lists more than ${maxObjects} objects`, 'maxModelFiles', cap.names);
      return object;
    },
    ask: async (request) => {
      if (store === undefined) return request();
      const { pressure, signal } = store;
      const answer = await (answered
        ? pressure.askThroughPushbacks(signal, request)
        : pressure.ask(signal, request));
      answered = true;
      return answer;
    },
  };
};
