/** A one-time warning when Express trusts every proxy, which lets clients choose their own IP. */
import { warnOnce } from '@sluice/core';
import type { Application } from 'express';

/** Warning code emitted when `trust proxy` is `true`. */
export const TRUST_PROXY_WARNING_CODE = 'SLUICE_TRUST_PROXY_ALL';

const checked = new WeakSet<object>();

/**
 * Warns once per process when `app.get('trust proxy') === true`: Express then takes
 * `req.ip` from the left-most `X-Forwarded-For` entry, which any client can write, so a
 * client could pick its own rate-limit identity. Each app is inspected once.
 */
export function checkTrustProxy(app: Application | undefined): void {
  if (app === undefined || checked.has(app)) return;
  checked.add(app);
  if (app.get('trust proxy') === true) {
    warnOnce(
      TRUST_PROXY_WARNING_CODE,
      "Express 'trust proxy' is true, so req.ip comes from the left-most X-Forwarded-For entry that any " +
        "client can set, and clients can choose their own rate-limit identity. Set 'trust proxy' to the " +
        'number of proxies in front of the app or to their addresses.',
    );
  }
}
