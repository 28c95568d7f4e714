/** What Koa tells core's one-time warning about a proxy setting that believes every forwarded address. */
import type { SluiceLogger } from '@sluice/core';
import { type PermissiveProxyTrust, warnIfPermissiveTrustProxy } from '@sluice/core/adapter';
import type Koa from 'koa';

const TRUSTS_EVERY_PROXY: PermissiveProxyTrust = {
  setting: 'Koa app.proxy is true with no app.maxIpsCount',
  ipSource: 'ctx.ip',
  fix: 'Set app.maxIpsCount to the number of proxies in front of the app.',
};

/**
 * Warns once per process (code `SLUICE_PERMISSIVE_TRUST_PROXY`) when `app.proxy` is true with no `app.maxIpsCount`: Koa then takes
 * `ctx.ip` from the left-most `X-Forwarded-For` entry, which any client can write, so a client
 * could pick its own rate-limit identity. Each app is inspected once. With `logger`, the warning
 * goes there instead.
 */
export function checkProxy(app: Koa | undefined, logger?: SluiceLogger): void {
  warnIfPermissiveTrustProxy(app, inspectProxy, logger);
}

function inspectProxy(app: Koa): PermissiveProxyTrust | undefined {
  const maxIpsCount = (app as Koa & { maxIpsCount?: number }).maxIpsCount ?? 0;
  return app.proxy === true && !(maxIpsCount > 0) ? TRUSTS_EVERY_PROXY : undefined;
}
