/**
 * The identity of one request, as every adapter derives it: the app's `identity` function's
 * answer (a string is kind `app`, an `Identity` keeps its kind), else the client IP (kind `ip`),
 * else one shared identity for requests that have neither.
 */

import { isIdentityInput } from '../keys/build-keys.js';
import type { Identity, IdentityInput } from '../types.js';
import { report, type SluiceLogger, WARNING_CODES } from '../warn.js';
import { ipIdentity } from './client-ip.js';

/**
 * The value of the identity (kind `ip`) used when a request has neither an identity nor a
 * client IP: every such request shares it.
 */
export const UNKNOWN_CLIENT_IDENTITY = 'unknown-client';

const UNKNOWN_CLIENT: Identity = Object.freeze({ kind: 'ip', value: UNKNOWN_CLIENT_IDENTITY });

/**
 * The identity a request is limited as.
 *
 * @param value what the app's `identity` function returned (undefined when there is none);
 *   an empty value, of any kind, means "no identity here"
 * @param ip the client IP the adapter found, if any
 * @param ipv6Subnet prefix length grouping IPv6 clients (see `ipIdentity`)
 * @param adapter names the adapter in the one-time warning for requests with neither
 * @param logger where that warning goes (else `console.warn`, once)
 * @throws TypeError when `value` is neither a string, an `Identity` nor undefined
 */
export function requestIdentity(
  value: unknown,
  ip: string | undefined,
  ipv6Subnet: number | false,
  adapter: string,
  logger?: SluiceLogger,
): IdentityInput {
  if (value !== undefined) {
    if (!isIdentityInput(value)) {
      const got = value === null ? 'null' : typeof value === 'object' ? 'another object' : typeof value;
      throw new TypeError(
        `rateLimit: "identity" must return a string, { kind: 'ip' | 'key' | 'app', value: string } or undefined, got ${got}`,
      );
    }
    if ((typeof value === 'string' ? value : value.value) !== '') return value;
  }
  if (ip !== undefined && ip !== '') return { kind: 'ip', value: ipIdentity(ip, { ipv6Subnet }) };
  report(
    logger,
    'warn',
    WARNING_CODES.NO_CLIENT_IP,
    `${adapter} rateLimit(): a request had no client IP and no identity, so it was limited ` +
      `together with every such request. Give an "identity" function or check the proxy settings.`,
    { adapter },
  );
  return UNKNOWN_CLIENT;
}
