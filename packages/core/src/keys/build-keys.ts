/**
 * Identities, their encoding and the storage keys built from them.
 *
 * Storage keys: `<prefix>:{<kind><encodedIdentity>}:<policy>[:<encodedRoute>]`, where `<kind>`
 * is the identity's kind (`ip`, `key`, `app`) and the encoded identity starts with `=`, `~`,
 * `#` or `!`, never a letter: two identities share a key only when kind and value are equal.
 *
 * Encodes identities and routes into key components that no client value can steer:
 * the result never contains `{` or `}` (so it cannot pick a Cluster slot), never contains `:`,
 * and distinct inputs give distinct components.
 *
 * Three forms, told apart by their first character, which never starts another form:
 * - `=<value>`: short values of letters, digits, `.`, `_`, `-`, `@` kept readable;
 * - `~<base64url>`: everything else up to 96 UTF-8 bytes (empty, Unicode, `{`, `:`, spaces);
 *   strings with unpaired surrogates are encoded as UTF-16 code units under `!`;
 * - `#<base64url of SHA-256>`: longer values, 44 characters whatever the input.
 *
 * Identity kinds: where an identity came from. Each kind is its own namespace in the key
 * layout, so no value of one kind ever meets a value of another: an API key spelled
 * `127.0.0.1` is not the client 127.0.0.1, and an application id spelled like an API key
 * is neither.
 */

import { describeValue } from '../policy/errors.js';
import type { CompiledPolicy, IdentityInput, IdentityKind } from '../types.js';
import { sha256 } from './sha256.js';

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

const SAFE = /^[A-Za-z0-9._@-]{1,64}$/;
/** Inputs longer than this many bytes are hashed. */
const MAX_PLAIN_BYTES = 96;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const encoder = new TextEncoder();

/** base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]! + ALPHABET[(n >>> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[n >>> 18]! + ALPHABET[(n >>> 12) & 63]! + ALPHABET[(n >>> 6) & 63]!;
  }
  return out;
}

/** True when `value` has no unpaired UTF-16 surrogate (UTF-8 encoding is then lossless). */
function isWellFormed(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return false;
    }
  }
  return true;
}

function utf16Bytes(value: string): Uint8Array {
  const out = new Uint8Array(value.length * 2);
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    out[i * 2] = c >>> 8;
    out[i * 2 + 1] = c & 0xff;
  }
  return out;
}

/**
 * Encodes one client-supplied value (an identity or a route) as a key component.
 * Injective in practice (hashing above 96 bytes relies on SHA-256), free of `{`, `}` and `:`.
 */
export function encodeKeyComponent(value: string): string {
  if (SAFE.test(value)) return `=${value}`;
  const wellFormed = isWellFormed(value);
  const bytes = wellFormed ? encoder.encode(value) : utf16Bytes(value);
  const marker = wellFormed ? '~' : '!';
  if (bytes.length <= MAX_PLAIN_BYTES) return `${marker}${base64url(bytes)}`;
  // The marker is hashed along with the bytes so the two byte encodings cannot meet.
  const tagged = new Uint8Array(bytes.length + 1);
  tagged[0] = wellFormed ? 0x55 : 0x16;
  tagged.set(bytes, 1);
  return `#${base64url(sha256(tagged))}`;
}

/** Every identity kind, in the order the key layout documents them. */
export const IDENTITY_KINDS: readonly IdentityKind[] = Object.freeze(['ip', 'key', 'app']);

/** True when `value` is a string or an `Identity` of a known kind with a string value. */
export function isIdentityInput(value: unknown): value is IdentityInput {
  if (typeof value === 'string') return true;
  if (typeof value !== 'object' || value === null) return false;
  const { kind, value: text } = value as { kind?: unknown; value?: unknown };
  return (kind === 'ip' || kind === 'key' || kind === 'app') && typeof text === 'string';
}

/**
 * Why `value` is not an identity, for an error message naming `label`
 * (`limiter.check: "identity" must be ...`).
 */
export function identityProblem(label: string, value: unknown): string {
  return (
    `${label} must be a string or { kind: ${IDENTITY_KINDS.map((k) => `'${k}'`).join(' | ')}, value: string }, ` +
    `got ${describeValue(value)}`
  );
}
