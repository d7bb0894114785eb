/** Env: the process environment as modelsync reads it, handed down from the process entry (nothing reads it itself). */

/** Environment variables by name; a variable that is not set is undefined. */
export type Env = Readonly<Record<string, string | undefined>>;
