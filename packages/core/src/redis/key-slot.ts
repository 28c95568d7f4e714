/**
 * Redis Cluster hash slots: CRC16/XMODEM of a key's hash tag (or of the whole key), mod 16384,
 * over the key's UTF-8 bytes, as Redis computes them. Web-standard.
 */

/** Number of hash slots in a Redis Cluster. */
export const HASH_SLOTS = 16_384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crcByte(crc: number, byte: number): number {
  return ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] as number);
}

/** CRC16/XMODEM of the UTF-8 bytes of `text` from `start` to `end` (UTF-16 indexes). */
function crc16Utf8(text: string, start: number, end: number): number {
  let crc = 0;
  for (let i = start; i < end; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      crc = crcByte(crc, code);
      continue;
    }
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < end) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd; // a lone surrogate encodes as U+FFFD
    if (code < 0x800) {
      crc = crcByte(crc, 0xc0 | (code >> 6));
    } else if (code < 0x10000) {
      crc = crcByte(crc, 0xe0 | (code >> 12));
      crc = crcByte(crc, 0x80 | ((code >> 6) & 0x3f));
    } else {
      crc = crcByte(crc, 0xf0 | (code >> 18));
      crc = crcByte(crc, 0x80 | ((code >> 12) & 0x3f));
      crc = crcByte(crc, 0x80 | ((code >> 6) & 0x3f));
    }
    crc = crcByte(crc, 0x80 | (code & 0x3f));
  }
  return crc;
}

/**
 * The Cluster hash slot of `key`: of its hash tag (the text between the first `{` and the next
 * `}`, when not empty), else of the whole key.
 */
export function hashSlotOf(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16Utf8(key, open + 1, close) % HASH_SLOTS;
  }
  return crc16Utf8(key, 0, key.length) % HASH_SLOTS;
}
