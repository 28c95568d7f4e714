/**
 * The small part of RFC 9651 (Structured Field Values for HTTP) the RateLimit headers need:
 * serializing Lists of String Items with Integer parameters, canonically.
 */

/** Largest magnitude of an sf-integer (15 decimal digits). */
export const SF_INTEGER_MAX = 999_999_999_999_999;

/**
 * Serializes an sf-string: `"` + the text with `\` and `"` escaped + `"`.
 *
 * @throws TypeError when the text holds a character outside printable ASCII (0x20-0x7E),
 *   which an sf-string cannot carry (RFC 9651 section 4.1.6: serialization fails)
 */
export function serializeSfString(value: string): string {
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) {
      throw new TypeError(`cannot serialize ${JSON.stringify(value)} as a structured-field string`);
    }
    const c = value[i]!;
    out += c === '"' || c === '\\' ? `\\${c}` : c;
  }
  return `${out}"`;
}

/**
 * Serializes an sf-integer. Non-integers are rounded towards zero; values beyond the
 * sf-integer range are clamped to it (a header must never fail to serialize).
 */
export function serializeSfInteger(value: number): string {
  if (Number.isNaN(value)) return '0';
  const clamped = Math.max(-SF_INTEGER_MAX, Math.min(SF_INTEGER_MAX, Math.trunc(value)));
  return String(clamped === 0 ? 0 : clamped);
}

/** Serializes a key (lower-case letter or `*` first, then `a-z 0-9 _ - . *`). */
function serializeSfKey(key: string): string {
  if (!/^[a-z*][a-z0-9_\-.*]*$/.test(key)) throw new TypeError(`invalid structured-field key ${key}`);
  return key;
}

/** One List member: a String Item with Integer parameters, in order. */
export interface SfStringItem {
  readonly value: string;
  readonly params: readonly (readonly [key: string, value: number])[];
}

/**
 * Serializes a List of String Items with Integer parameters:
 * `"burst";q=20;w=20, "daily";q=1000;w=86400` (members joined by `,` and one space).
 */
export function serializeSfList(items: readonly SfStringItem[]): string {
  return items
    .map(
      (item) =>
        serializeSfString(item.value) +
        item.params.map(([key, value]) => `;${serializeSfKey(key)}=${serializeSfInteger(value)}`).join(''),
    )
    .join(', ');
}
