import { describe, expect, it } from 'vitest';
import { encodeKeyComponent } from './build-keys.js';

/** UTF-16 code units, big-endian, computed independently of the code under test. */
function utf16be(value: string): Buffer {
  return Buffer.from(value, 'utf16le').swap16();
}

/** True when UTF-8 round-trips the value (no unpaired surrogate), by Node's own encoder. */
function wellFormed(value: string): boolean {
  return Buffer.from(value, 'utf8').toString('utf8') === value;
}

/** The component the documented forms give, from Node's own encoders. */
function expected(value: string): string {
  if (wellFormed(value)) return `~${Buffer.from(value, 'utf8').toString('base64url')}`;
  return `!${utf16be(value).toString('base64url')}`;
}

describe('encodeKeyComponent: exact forms at the edges', () => {
  it.each([
    ['a b', 'plain ASCII outside the readable set'],
    ['\ud7ff x', 'the code unit below the surrogates'],
    ['\ue000 x', 'the code unit above the surrogates'],
    ['\ud800\udc00', 'the lowest surrogate pair'],
    ['\udbff\udfff', 'the highest surrogate pair'],
    ['a\ud83d\ude00b', 'a pair after another character'],
    ['\ud83d\ude00\ud83d\ude00', 'two pairs in a row'],
  ])('%j (%s) is well formed: UTF-8 under ~', (value) => {
    expect(wellFormed(value)).toBe(true);
    expect(encodeKeyComponent(value)).toBe(expected(value));
    expect(encodeKeyComponent(value).startsWith('~')).toBe(true);
  });

  it.each([
    ['\ud800', 'a lone lowest high surrogate'],
    ['\udbff', 'a lone highest high surrogate'],
    ['\udbffx', 'a high surrogate before a plain character'],
    ['\ud800\ud800', 'a high surrogate before another high surrogate'],
    ['\ud800\ue000', 'a high surrogate before the code unit above the low ones'],
    ['\udc00', 'a lone lowest low surrogate'],
    ['\udfff', 'a lone highest low surrogate'],
    ['x\udfff', 'a low surrogate after a plain character'],
    ['ab\udc00cd', 'a lone surrogate inside a longer value'],
  ])('%j (%s) is not well formed: UTF-16 code units under !', (value) => {
    expect(wellFormed(value)).toBe(false);
    expect(encodeKeyComponent(value)).toBe(expected(value));
    expect(encodeKeyComponent(value).startsWith('!')).toBe(true);
  });

  it('pins the UTF-16 form byte by byte', () => {
    // 0xd800 0x0041 0x00ff: high byte then low byte of every code unit, in order.
    expect(encodeKeyComponent('\ud800A\u00ff')).toBe(
      `!${Buffer.from([0xd8, 0x00, 0x00, 0x41, 0x00, 0xff]).toString('base64url')}`,
    );
  });

  it('keeps 96 UTF-8 bytes readable and hashes 97', () => {
    const at = 'é'.repeat(48); // 96 bytes
    const over = `${at}x`; // 97 bytes
    expect(Buffer.byteLength(at)).toBe(96);
    expect(encodeKeyComponent(at)).toBe(expected(at));
    expect(encodeKeyComponent(over).startsWith('#')).toBe(true);
    expect(encodeKeyComponent(over)).toHaveLength(44);
  });

  it('keeps 48 UTF-16 code units (96 bytes) of a broken string readable and hashes 49', () => {
    const at = `\ud800${'x'.repeat(47)}`;
    const over = `${at}x`;
    expect(encodeKeyComponent(at)).toBe(expected(at));
    expect(encodeKeyComponent(over).startsWith('#')).toBe(true);
    expect(encodeKeyComponent(over)).not.toBe(encodeKeyComponent(`\ud801${'x'.repeat(48)}`));
  });
});
