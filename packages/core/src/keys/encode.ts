/**
 * Encodes identities and routes into key components that no client value can steer:
 * the result never contains `{` or `}` (so it cannot pick a Cluster slot), never contains `:`,
 * and distinct inputs give distinct components.
 *
 * Three forms, told apart by their first character, which never starts another form:
 * - `=<value>`: short values of letters, digits, `.`, `_`, `-`, `@` kept readable;
 * - `~<base64url>`: everything else up to 96 UTF-8 bytes (empty, Unicode, `{`, `:`, spaces);
 *   strings with unpaired surrogates are encoded as UTF-16 code units under `!`;
 * - `#<base64url of SHA-256>`: longer values, 44 characters whatever the input.
 */
import { sha256 } from './sha256.js';

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
