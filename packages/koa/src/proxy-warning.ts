/** A one-time warning when Koa trusts every forwarded address, which lets clients choose their own IP. */
import { WARNING_CODES, warnOnce } from '@sluice/core';
import type Koa from 'koa';

const checked = new WeakSet<object>();

/**
 * Warns once per process (code `SLUICE_PERMISSIVE_TRUST_PROXY`) when `app.proxy` is true with no `app.maxIpsCount`: Koa then takes
 * `ctx.ip` from the left-most `X-Forwarded-For` entry, which any client can write, so a client
 * could pick its own rate-limit identity. Each app is inspected once.
 */
export function checkProxy(app: Koa | undefined): void {
  if (app === undefined || checked.has(app)) return;
  checked.add(app);
  const maxIpsCount = (app as Koa & { maxIpsCount?: number }).maxIpsCount ?? 0;
  if (app.proxy === true && !(maxIpsCount > 0)) {
    warnOnce(
      WARNING_CODES.PERMISSIVE_TRUST_PROXY,
      'Koa app.proxy is true with no app.maxIpsCount, so ctx.ip comes from the left-most X-Forwarded-For ' +
        'entry that any client can set, and clients can choose their own rate-limit identity. Set ' +
        'app.maxIpsCount to the number of proxies in front of the app.',
    );
  }
}
