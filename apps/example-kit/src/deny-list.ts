/** The deny list the example apps take from `SLUICE_DENY_LIST`. */
import { CidrError, type DenyListEntries, parseCidr, parseIp } from '@sluice/core';

/**
 * `SLUICE_DENY_LIST`: comma-separated CIDR ranges, addresses and API keys, answered 403 on every
 * limited route. An entry with a `/` or that is an IP address is a client-IP range (a bad range
 * throws at start-up, naming it); anything else is an API key (the `x-api-key` identities, kind
 * `key`). Undefined when unset or empty.
 *
 * @example
 * denyListFromEnv({ SLUICE_DENY_LIST: '203.0.113.0/24, 2001:db8::/32, leaked-key' });
 * // { ip: ['203.0.113.0/24', '2001:db8::/32'], key: ['leaked-key'] }
 */
export function denyListFromEnv(env: NodeJS.ProcessEnv): DenyListEntries | undefined {
  const raw = env.SLUICE_DENY_LIST?.trim();
  if (raw === undefined || raw === '') return undefined;
  const ip: string[] = [];
  const key: string[] = [];
  for (const part of raw.split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    if (entry.includes('/') || parseIp(entry) !== undefined) {
      try {
        parseCidr(entry);
      } catch (error) {
        if (error instanceof CidrError) throw new Error(`SLUICE_DENY_LIST: "${entry}" ${error.reason}`);
        throw error;
      }
      ip.push(entry);
    } else key.push(entry);
  }
  return { ip, key };
}
