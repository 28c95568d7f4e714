/** What one entry of the option schema holds, and the types derived from a table of entries. */

/** Where an option is taken: `createLimiter()`, an adapter's `rateLimit()`, the Nest module or decorator. */
export type OptionSurface =
  | 'createLimiter'
  | 'express'
  | 'koa'
  | 'hono'
  | 'fastify'
  | 'nestjs-module'
  | 'nestjs-decorator';

/** The middleware adapters: `rateLimit()` of Express, Koa and Hono, and the Fastify plugin. */
export const MIDDLEWARE: readonly OptionSurface[] = Object.freeze(['express', 'koa', 'hono', 'fastify']);

/** Throws the option's error: what the value must be, optionally for a nested option and its value. */
export type OptionFail = (requirement: string, option?: string, value?: unknown) => never;

declare const requestType: unique symbol;

/**
 * Stands for the framework's request in an entry's value type (`(req: RequestOf) => boolean`);
 * `RateLimitOptions<Req>` puts `Req` in its place.
 */
export interface RequestOf {
  readonly [requestType]: true;
}

/** One option: its default, the check of a given value, a one-line doc and who takes it. */
export interface OptionSpec<T> {
  /** The value used when the option is unset (`undefined`); `undefined` when there is none. */
  readonly default: T | undefined;
  /** The default as the README tables write it (`'draft-10'`, `client IP`), `-` for none. */
  readonly defaultDoc: string;
  /** What the option does, in one line. */
  readonly doc: string;
  /** Who takes the option. */
  readonly surfaces: readonly OptionSurface[];
  /**
   * Checks a given (not `undefined`) value and returns it as the resolver keeps it; calls
   * `fail` with what it must be otherwise. Unset: any value of the right type passes here
   * (the option's rules across options live in its resolver).
   */
  readonly check?: ((value: unknown, fail: OptionFail) => unknown) | undefined;
  /** The option's value type, for the types derived from the table; never set at run time. */
  readonly type?: T;
}

/** An entry of value type `T`: `option<number>({ ... })`. */
export function option<T>(spec: Omit<OptionSpec<T>, 'type'>): OptionSpec<T> {
  return Object.freeze(spec);
}

/** `T` with `RequestOf` replaced by `Req` in a function's first parameter. */
export type BindRequest<T, Req> = T extends (req: infer A, ...rest: infer P) => infer R
  ? [A] extends [RequestOf]
    ? (req: Req, ...rest: P) => R
    : T
  : T;

/** The options object a table of entries describes: every option optional, docs kept per field. */
export type OptionsOf<Table, Req = never> = {
  -readonly [K in keyof Table]?: Table[K] extends OptionSpec<infer T> ? BindRequest<T, Req> : never;
};

/** The names of a table's entries that `surface` takes. */
export function namesFor(
  table: Readonly<Record<string, OptionSpec<unknown>>>,
  surface: OptionSurface,
): string[] {
  return Object.keys(table).filter((name) => (table[name] as OptionSpec<unknown>).surfaces.includes(surface));
}

/**
 * Runs the entry's check on a set value, throwing `error(option, value, requirement)` when it
 * fails; returns the entry's default for an unset one.
 */
export function checkOption(
  spec: OptionSpec<unknown>,
  name: string,
  value: unknown,
  error: (option: string, value: unknown, requirement: string) => Error,
): unknown {
  if (value === undefined) return spec.default;
  if (spec.check === undefined) return value;
  return spec.check(value, (requirement, option = name, given = value) => {
    throw error(option, given, requirement);
  });
}

/** A positive safe integer, or `fail`. */
export function positiveInteger(value: unknown, fail: OptionFail): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    fail('must be a positive integer');
  return value as number;
}

/** A positive, finite number, or `fail`. */
export function positiveNumber(value: unknown, fail: OptionFail): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail('must be a positive, finite number');
  }
  return value as number;
}

/** The longest delay a timer takes (2^31 - 1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A positive number of milliseconds a timer can wait (at most `MAX_TIMER_MS`), or `fail`. */
export function timerMs(value: unknown, fail: OptionFail): number {
  const ms = positiveNumber(value, fail);
  if (ms > MAX_TIMER_MS)
    fail(`must be a positive number of milliseconds up to ${MAX_TIMER_MS} (a timer's range)`);
  return ms;
}

/** A function, or `fail`. */
export function isFunction(value: unknown, fail: OptionFail): unknown {
  if (typeof value !== 'function') fail('must be a function');
  return value;
}

/** `true` or `false`, or `fail`. */
export function isBoolean(value: unknown, fail: OptionFail): boolean {
  if (typeof value !== 'boolean') fail('must be true or false');
  return value as boolean;
}

/** A plain object (not an array, not null), or `fail`. */
export function isObject(value: unknown, fail: OptionFail): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('must be an object');
  return value as Record<string, unknown>;
}
