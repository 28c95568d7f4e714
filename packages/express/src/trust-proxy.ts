/** A one-time warning when Express trusts every proxy, which lets clients choose their own IP. */
import { WARNING_CODES, warnOnce } from '@sluice/core';
import type { Application } from 'express';

const checked = new WeakSet<object>();

/**
 * Warns once per process (code `SLUICE_PERMISSIVE_TRUST_PROXY`) when `app.get('trust proxy') === true`: Express then takes
 * `req.ip` from the left-most `X-Forwarded-For` entry, which any client can write, so a
 * client could pick its own rate-limit identity. Each app is inspected once.
 */
export function checkTrustProxy(app: Application | undefined): void {
  if (app === undefined || checked.has(app)) return;
  checked.add(app);
  if (app.get('trust proxy') === true) {
    warnOnce(
      WARNING_CODES.PERMISSIVE_TRUST_PROXY,
      "Express 'trust proxy' is true, so req.ip comes from the left-most X-Forwarded-For entry that any " +
        "client can set, and clients can choose their own rate-limit identity. Set 'trust proxy' to the " +
        'number of proxies in front of the app or to their addresses.',
    );
  }
}
