/** isJsonObject and jsonObject: a decoded JSON value that is an object (not null, not an array), before its fields are read. */

/** True for an object that is neither `null` nor an array: what a JSON `{…}` decodes to. */
export const isJsonObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value`'s fields when it is a JSON object, else undefined (a `null`, a number, an array): read them safely. */
export const jsonObject = (value: unknown): Readonly<Record<string, unknown>> | undefined =>
  isJsonObject(value) ? value : undefined;
