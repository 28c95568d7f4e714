/**
 * Storage keys: `<prefix>:{<kind><encodedIdentity>}:<policy>[:<encodedRoute>]`, where `<kind>`
 * is the identity's kind (`ip`, `key`, `app`) and the encoded identity starts with `=`, `~`,
 * `#` or `!`, never a letter: two identities share a key only when kind and value are equal.
 */
import type { CompiledPolicy, IdentityInput } from '../types.js';
import { encodeKeyComponent } from './encode.js';

const PREFIX = /^[^{}\s]{1,128}$/;

/** True when `prefix` can start a key: 1-128 characters, no whitespace, no `{` or `}`. */
export function isValidPrefix(prefix: unknown): prefix is string {
  return typeof prefix === 'string' && PREFIX.test(prefix);
}

/**
 * The hash-tagged part shared by every key of one identity: `<prefix>:{<kind><encodedIdentity>}`
 * (`sluice:{ip=203.0.113.7}`, `sluice:{key=203.0.113.7}`, `sluice:{app=tenant-42}`). Every
 * policy of one request lives in the same Redis Cluster slot.
 *
 * @param identity an `Identity`, or a string: kind `app`
 */
export function identityTag(prefix: string, identity: IdentityInput): string {
  if (typeof identity === 'string') return `${prefix}:{app${encodeKeyComponent(identity)}}`;
  return `${prefix}:{${identity.kind}${encodeKeyComponent(identity.value)}}`;
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
export function buildKey(
  prefix: string,
  identity: IdentityInput,
  policy: CompiledPolicy,
  route?: string,
): string {
  return policyKey(identityTag(prefix, identity), policy, route);
}

/**
 * The record key of an idempotent request (`descriptor.requestId`), in the identity's slot:
 * `<tag>:~rid:<scope>`, where `<scope>` encodes the request id together with the keys the
 * request is decided on (its policies, and the route of route-scoped ones). One key per check:
 * every policy of the check, enforced and shadow, is decided in one store call. So a request id
 * replays only for the same identity and the same policy set; the same id with another identity
 * or other policies is a new request. Policy names never start with `~`, so this never meets a
 * policy key.
 *
 * @param tag the result of `identityTag`
 * @param policyKeys the keys of the entries the request is decided on, in limiter order
 */
export function requestKey(tag: string, requestId: string, policyKeys: readonly string[]): string {
  // Each policy key starts with the tag: keep only what follows it. JSON keeps the list injective.
  const scope = JSON.stringify([requestId, ...policyKeys.map((key) => key.slice(tag.length))]);
  return `${tag}:~rid:${encodeKeyComponent(scope)}`;
}

/**
 * The ban key of a policy key (`policy.ban`): `<policy key>:~ban`, in the same slot. Policy names
 * never start with `~`, and `~ban` is no component `encodeKeyComponent` writes (its last base64url
 * character would carry nonzero padding bits), so this never meets a policy key (route-scoped
 * ones included) nor a request record.
 */
export function banKeyOf(policyKey: string): string {
  return `${policyKey}:~ban`;
}
