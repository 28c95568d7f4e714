/**
 * Coded warnings and where they go. Each code is stable (`WARNING_CODES`); an entry goes to the
 * app's logger when one is given (`logger` option, structured: code, message, fields), else it is
 * printed once per process (or isolate) through `console.warn`, in the style of
 * express-rate-limit's validations. Fields hold option names, counts and classes: never an
 * identity, a key or a path. Web-standard; every layer may report through here.
 */

/** The warning codes Sluice emits. Stable: match on them, not on the text. */
export const WARNING_CODES = {
  /** Trust proxy is set so broadly (`true`) that clients can choose their own IP. */
  PERMISSIVE_TRUST_PROXY: 'SLUICE_PERMISSIVE_TRUST_PROXY',
  /** A request had no usable client IP and no identity; it was limited under a shared identity. */
  NO_CLIENT_IP: 'SLUICE_NO_CLIENT_IP',
  /** `shadow: true` with a shared limiter: denies pass here, but the limiter still records them as over_limit. */
  SHADOW_WITH_SHARED_LIMITER: 'SLUICE_SHADOW_WITH_SHARED_LIMITER',
  /** Redis evicts any key when full (`maxmemory-policy` allkeys-*): live limits can be forgotten. */
  REDIS_ALLKEYS_EVICTION: 'SLUICE_REDIS_ALLKEYS_EVICTION',
  /** A `policies` or `limit` function threw or answered a bad value: that request was `unavailable`. */
  POLICY_CHOICE_FAILED: 'SLUICE_POLICY_CHOICE_FAILED',
  /** A settle after the response failed (a throwing `settle` option, bad units, the store): not settled. */
  SETTLE_FAILED: 'SLUICE_SETTLE_FAILED',
  /** Routes the adapter's hook does not reach (another scope, declared before it): not limited. */
  ROUTES_NOT_LIMITED: 'SLUICE_ROUTES_NOT_LIMITED',
} as const;

const emitted = new Set<string>();

/**
 * Prints `[code] message` with `console.warn` the first time `code` is seen, and nothing
 * after that. Never throws.
 *
 * @param code a stable code such as `SLUICE_PERMISSIVE_TRUST_PROXY`
 * @param message what is wrong and how to fix it; never include identities or keys
 * @returns true when the warning was printed now
 */
export function warnOnce(code: string, message: string): boolean {
  if (emitted.has(code)) return false;
  emitted.add(code);
  try {
    console.warn(`[${code}] ${message}`);
  } catch {
    // A console that throws must not break a request.
  }
  return true;
}

/** Forgets which codes were printed (and which apps were inspected), so tests can assert a warning again. */
export function resetWarnings(): void {
  emitted.clear();
  inspectedApps = new WeakSet<object>();
}

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

/**
 * What an adapter knows about an app whose proxy trust believes every forwarded hop, in the
 * framework's own terms.
 */
export interface PermissiveProxyTrust {
  /** The setting as the framework names it: `Express 'trust proxy' is true`. */
  readonly setting: string;
  /** Where the framework then reads the client address: `req.ip`. */
  readonly ipSource: string;
  /** How to fix it: `Set 'trust proxy' to the number of proxies in front of the app.` */
  readonly fix: string;
}

let inspectedApps = new WeakSet<object>();

/**
 * Warns once per process (code `SLUICE_PERMISSIVE_TRUST_PROXY`) when an app trusts every
 * proxy: the framework then takes the client address from the left-most `X-Forwarded-For`
 * entry, which any client can write, so a client could pick its own rate-limit identity.
 * Each app is inspected once: `inspect(app)` runs the first time the app is seen and returns
 * what is wrong, or undefined when the setting is safe.
 */
export function warnIfPermissiveTrustProxy<App extends object>(
  app: App | undefined,
  inspect: (app: App) => PermissiveProxyTrust | undefined,
  logger?: SluiceLogger,
): void {
  if (app === undefined || inspectedApps.has(app)) return;
  inspectedApps.add(app);
  const permissive = inspect(app);
  if (permissive === undefined) return;
  report(
    logger,
    'warn',
    WARNING_CODES.PERMISSIVE_TRUST_PROXY,
    `${permissive.setting}, so ${permissive.ipSource} comes from the left-most X-Forwarded-For entry that ` +
      'any client can set, and clients can choose their own rate-limit identity. ' +
      permissive.fix,
    { setting: permissive.setting },
  );
}

/**
 * Reports at startup (code `SLUICE_ROUTES_NOT_LIMITED`) the routes an adapter does not limit
 * although none of them opted out, named `METHOD pattern` (route patterns, never request paths).
 * Nothing when `routes` is empty.
 *
 * @param fix how to get those routes limited, in the framework's terms
 */
export function warnRoutesNotLimited(reporter: Reporter, routes: readonly string[], fix: string): void {
  if (routes.length === 0) return;
  report(
    reporter.logger,
    'warn',
    WARNING_CODES.ROUTES_NOT_LIMITED,
    `${routes.length} route(s) not rate limited by @sluice/${reporter.adapter}: ${routes.join(', ')}. ${fix}`,
    { adapter: reporter.adapter, routes: routes.length },
  );
}
