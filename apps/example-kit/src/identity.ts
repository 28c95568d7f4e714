/**
 * The example apps' identity: the `x-api-key` header, a stand-in for a tenant that something in
 * front of the app has authenticated (these apps have no authentication of their own: a real
 * app verifies the key first, or takes the tenant from its session). The key is an identity of
 * kind `key`, so a key spelled like an address never shares the budget of that client address.
 */
import type { Identity } from '@sluice/core';

/** The header carrying the caller's API key; the identity when present, else the client IP. */
export const API_KEY_HEADER = 'x-api-key';

/**
 * The identity for an `x-api-key` header value: `{ kind: 'key', value }`, or undefined (the
 * client IP decides) when the header is missing, empty or repeated.
 */
export function apiKeyIdentity(header: string | readonly string[] | undefined): Identity | undefined {
  return typeof header === 'string' && header !== '' ? { kind: 'key', value: header } : undefined;
}
