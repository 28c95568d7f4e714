import { describe, expect, it } from 'vitest';
import { encodeKeyComponent, identityTag, requestKey } from './build-keys.js';

describe('requestKey', () => {
  it('gives the one documented record key in the identity slot', () => {
    const tag = identityTag('sluice', '203.0.113.7');
    const policyKeys = [`${tag}:api`];
    const encoded = encodeKeyComponent(JSON.stringify(['req 42', ':api']));
    expect(requestKey(tag, 'req 42', policyKeys)).toBe(`${tag}:~rid:${encoded}`);
  });

  it('keeps the records of different request ids apart', () => {
    const tag = identityTag('sluice', 'tenant');
    const a = requestKey(tag, 'a', [`${tag}:api`]);
    const b = requestKey(tag, 'b', [`${tag}:api`]);
    expect(a).not.toBe(b);
  });
});
