/** Storage keys: `<prefix>:{<encodedIdentity>}:<policy>[:<encodedRoute>]`. */
import type { CompiledPolicy } from '../types.js';
import { encodeKeyComponent } from './encode.js';

const PREFIX = /^[^{}\s]{1,128}$/;

/** True when `prefix` can start a key: 1-128 characters, no whitespace, no `{` or `}`. */
export function isValidPrefix(prefix: unknown): prefix is string {
  return typeof prefix === 'string' && PREFIX.test(prefix);
}

/**
 * The hash-tagged part shared by every key of one identity: `<prefix>:{<encodedIdentity>}`.
 * Every policy of one request lives in the same Redis Cluster slot.
 */
export function identityTag(prefix: string, identity: string): string {
  return `${prefix}:{${encodeKeyComponent(identity)}}`;
}

/**
 * The storage key of one policy for one request. Route-scoped policies append the encoded route
 * (`-` when the request has none).
 *
 * @param tag the result of `identityTag`
 */
export function policyKey(tag: string, policy: CompiledPolicy, route: string | undefined): string {
  if (policy.scope === 'route') {
    return `${tag}:${policy.name}:${route === undefined ? '-' : encodeKeyComponent(route)}`;
  }
  return `${tag}:${policy.name}`;
}

/** The storage key of `policy` for `identity` (and `route` when the policy is route-scoped). */
export function buildKey(prefix: string, identity: string, policy: CompiledPolicy, route?: string): string {
  return policyKey(identityTag(prefix, identity), policy, route);
}

/**
 * The record keys of an idempotent request (`descriptor.requestId`), in the identity's slot:
 * `<tag>:~rid:<encodedRequestId>` and `<tag>:~rid2:<encodedRequestId>` (one per store call a
 * check may make). Policy names never start with `~`, so these never meet a policy key.
 */
export function requestKeys(tag: string, requestId: string): [string, string] {
  const encoded = encodeKeyComponent(requestId);
  return [`${tag}:~rid:${encoded}`, `${tag}:~rid2:${encoded}`];
}
