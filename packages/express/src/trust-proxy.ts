/** What Express tells core's one-time warning about a trust proxy setting that believes every hop. */
import type { SluiceLogger } from '@sluice/core';
import { type PermissiveProxyTrust, warnIfPermissiveTrustProxy } from '@sluice/core/adapter';
import type { Application } from 'express';

const TRUSTS_EVERY_PROXY: PermissiveProxyTrust = {
  setting: "Express 'trust proxy' is true",
  ipSource: 'req.ip',
  fix: "Set 'trust proxy' to the number of proxies in front of the app or to their addresses.",
};

/**
 * Warns once per process (code `SLUICE_PERMISSIVE_TRUST_PROXY`) when `app.get('trust proxy') === true`: Express then takes
 * `req.ip` from the left-most `X-Forwarded-For` entry, which any client can write, so a
 * client could pick its own rate-limit identity. Each app is inspected once. With `logger`, the
 * warning goes there instead.
 */
export function checkTrustProxy(app: Application | undefined, logger?: SluiceLogger): void {
  warnIfPermissiveTrustProxy(app, inspectTrustProxy, logger);
}

function inspectTrustProxy(app: Application): PermissiveProxyTrust | undefined {
  return app.get('trust proxy') === true ? TRUSTS_EVERY_PROXY : undefined;
}
