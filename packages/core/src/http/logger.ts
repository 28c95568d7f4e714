/**
 * The pluggable logger: Sluice's coded warnings and errors as structured entries (code, message,
 * fields) to the app's logger when one is given (`logger` option), else `console.warn` once per
 * code (warn.ts). Fields hold option names, counts and classes: never an identity, a key or a path.
 */
import { warnOnce } from './warn.js';

/** One coded entry. */
export interface LogEntry {
  /** A stable code such as `SLUICE_POLICY_CHOICE_FAILED`: match on it, not on the message. */
  readonly code: string;
  /** What happened and how to fix it. */
  readonly message: string;
  /** Structured details (the adapter, the option); never an identity, a key or a path. */
  readonly fields: Readonly<Record<string, string | number | boolean>>;
}

/**
 * Where coded entries go. pino, winston, bunyan and console fit through a one-line adapter, e.g.
 * `{ warn: (e) => pino.warn(e.fields, `[${e.code}] ${e.message}`), error: ... }`. Every occurrence
 * is handed over (the app's logger decides about sampling); without a logger, each code is printed
 * once per process.
 */
export interface SluiceLogger {
  warn(entry: LogEntry): void;
  /** Errors (a policy choice or a settle that failed); `warn` takes them when absent. */
  error?(entry: LogEntry): void;
}

/** True when `value` can serve as a `SluiceLogger`. */
export function isLogger(value: unknown): value is SluiceLogger {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as SluiceLogger).warn === 'function' &&
    ((value as SluiceLogger).error === undefined || typeof (value as SluiceLogger).error === 'function')
  );
}

/**
 * Reports one coded entry: to `logger` when given (its `error` for errors, else `warn`; a logger
 * that throws changes nothing), else `console.warn` the first time the code is seen.
 */
export function report(
  logger: SluiceLogger | undefined,
  level: 'warn' | 'error',
  code: string,
  message: string,
  fields: LogEntry['fields'] = {},
): void {
  if (logger === undefined) {
    warnOnce(code, message);
    return;
  }
  try {
    const entry: LogEntry = { code, message, fields };
    if (level === 'error' && typeof logger.error === 'function') logger.error(entry);
    else logger.warn(entry);
  } catch {
    // A logger's failure must not break a request.
  }
}

/** Who reports from an adapter: its name (for messages) and the app's logger, if any. */
export interface Reporter {
  /** `express`, `koa`, `hono`, `nestjs`. */
  readonly adapter: string;
  readonly logger: SluiceLogger | undefined;
}
