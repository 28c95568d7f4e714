import { describe, expect, it } from 'vitest';
import { identityTag, requestKeys } from './build-keys.js';
import { encodeKeyComponent } from './encode.js';

describe('requestKeys', () => {
  it('gives the two documented record keys in the identity slot, distinct from each other', () => {
    const tag = identityTag('sluice', '203.0.113.7');
    const policyKeys = [`${tag}:api`];
    const encoded = encodeKeyComponent(JSON.stringify(['req 42', ':api']));
    expect(requestKeys(tag, 'req 42', policyKeys)).toEqual([
      `${tag}:~rid:${encoded}`,
      `${tag}:~rid2:${encoded}`,
    ]);
  });

  it('keeps the records of different request ids apart', () => {
    const tag = identityTag('sluice', 'tenant');
    const [a1, a2] = requestKeys(tag, 'a', [`${tag}:api`]);
    const [b1, b2] = requestKeys(tag, 'b', [`${tag}:api`]);
    expect(new Set([a1, a2, b1, b2]).size).toBe(4);
  });
});
