/**
 * Redis Cluster key slots (CRC16/XMODEM of the hash tag, mod 16384), computed locally so a test
 * can say which primary should hold a key. Cross-checked against CLUSTER KEYSLOT in the tests.
 */

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/** The Cluster slot of `key`, honouring `{hash tags}` the way Redis does. */
export function keySlot(key: string): number {
  const bytes = new TextEncoder().encode(key);
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16384;
  }
  return crc16(bytes) % 16384;
}

/** The port of the primary whose slot ranges contain `slot`. */
export function ownerOf(
  slot: number,
  primaries: readonly { port: number; slots: readonly (readonly [number, number])[] }[],
): number | undefined {
  return primaries.find((p) => p.slots.some(([a, b]) => slot >= a && slot <= b))?.port;
}
