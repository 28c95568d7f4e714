/**
 * Coded, one-time configuration warnings, in the style of express-rate-limit's validations:
 * each code is printed once per process (or isolate) through `console.warn`.
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

import { type Reporter, report, type SluiceLogger } from './logger.js';

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
