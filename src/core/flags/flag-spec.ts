/** FlagSpec: what the flag table says of one flag; `withNames`: its flag and env var, spelled from its field. */
import type * as t from 'io-ts';

/** One flag: how it is spelled, the env var that can set it instead, its default, its help and its codec. */
export interface FlagSpec {
  readonly flag: `--${string}`;
  /** The value's placeholder in `--help` (`dir`); absent for a switch, which takes no value. */
  readonly arg?: string;
  readonly env: `MODELSYNC_${string}`;
  /** As typed; absent for a switch (off) and for a setting that may stay unset (optional in AppConfig). */
  readonly default?: string;
  /** One line for `--help` and docs/operating.md; backticks mark code in the docs and are dropped in `--help`. */
  readonly help: string;
  /** Decodes the text (a switch: the boolean) into the AppConfig field of the same name. */
  readonly codec: t.Mixed;
  /** The values `--help` lists. */
  readonly choices?: ReadonlyArray<string>;
}

/** A flag as the table writes it: its flag and env var follow from its AppConfig field. */
export type FlagEntry = Omit<FlagSpec, 'flag' | 'env'>;

type Named<T> = {
  readonly [K in keyof T]: T[K] & Pick<FlagSpec, 'flag' | 'env'>;
};

/**
 * `entries` with the flag and env var of each spelled from its field: `configDir` is `--config-dir` and
 * `MODELSYNC_CONFIG_DIR`. The docs' table (checked by test/core/flags) keeps a renamed field from passing unseen.
 */
export const withNames = <T extends Readonly<Record<string, FlagEntry>>>(entries: T): Named<T> =>
  Object.fromEntries(
    Object.entries(entries).map(([field, entry]) => {
      const words = field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
      return [
        field,
        { flag: `--${words}`, env: `MODELSYNC_${words.toUpperCase().replaceAll('-', '_')}`, ...entry },
      ];
    }),
  ) as Named<T>;
