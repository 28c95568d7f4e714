/**
 * Multi-policy denials on every adapter setup (Express 5 and 4, Koa 3 and 2, NestJS on Express
 * and on Fastify, Hono), over real HTTP with the memory store and an injected clock: the denied
 * response carries one `RateLimit-Policy` and one `RateLimit` member per policy, `Retry-After`
 * of the longest wait among the denying policies, and a body naming the denying policies and
 * the one with the longest wait; a policy that did not deny was not charged.
 */
import { createLimiter, MemoryStore, type PolicyInput } from '@sluice/core';
import { afterEach, describe, expect, test } from 'vitest';
import { EXPECTED } from '../support/expected.js';
import { HARNESSES, type Served } from './adapters.js';
import { json, type Reply, request } from './client.js';

/** A start time on a 60 s boundary, so both fixed windows start with it. */
const T0 = 1_800_000_000_000;

const BURST: PolicyInput = { name: 'burst', algorithm: 'fixed-window', limit: 1, window: '10s' };
const MINUTE: PolicyInput = { name: 'minute', algorithm: 'fixed-window', limit: 2, window: '1m' };
const POLICY_HEADER = '"burst";q=1;w=10, "minute";q=2;w=60';

function expectDenied(reply: Reply): void {
  expect(reply.status).toBe(429);
  expect(reply.headers['content-type']?.split(';')[0]).toBe('application/problem+json');
  expect(reply.headers['ratelimit-policy']).toBe(POLICY_HEADER);
}

describe.each(HARNESSES)('$name', (harness) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test('two policies: headers per policy, Retry-After and body of the longest wait, nothing charged on a denial', async () => {
    let now = T0;
    const clock = () => now;
    const limiter = createLimiter({ policies: [BURST, MINUTE], store: new MemoryStore({ clock }), clock });
    served = await harness.serve({ limiter, identity: (req) => req.header('x-tenant') }, 'route');
    const get = (tenant: string) => request(`${served?.url}/items/1`, { headers: { 'x-tenant': tenant } });

    for (const tenant of ['a', 'b']) {
      const first = await get(tenant);
      expect(first.status).toBe(200);
      expect(first.headers['ratelimit-policy']).toBe(POLICY_HEADER);
      expect(first.headers.ratelimit).toBe('"burst";r=0;t=10, "minute";r=1;t=60');
    }

    // Only "burst" denies; "minute" keeps its unit (the denial charged nothing).
    now += 4000;
    const burstOnly = await get('a');
    expectDenied(burstOnly);
    expect(burstOnly.headers['retry-after']).toBe('6');
    expect(burstOnly.headers.ratelimit).toBe('"burst";r=0;t=6, "minute";r=1;t=56');
    expect(json(burstOnly)).toEqual(EXPECTED.tooManyRequests(['burst'], 'burst', 6));

    now += 6000;
    for (const tenant of ['a', 'b']) {
      const second = await get(tenant);
      expect(second.status).toBe(200);
      expect(second.headers.ratelimit).toBe('"burst";r=0;t=10, "minute";r=0;t=50');
    }

    // Both deny: Retry-After and "policy" are the longer wait's; both are violated.
    now += 3000;
    const both = await get('a');
    expectDenied(both);
    expect(both.headers['retry-after']).toBe('47');
    expect(both.headers.ratelimit).toBe('"burst";r=0;t=7, "minute";r=0;t=47');
    expect(json(both)).toEqual(EXPECTED.tooManyRequests(['burst', 'minute'], 'minute', 47));

    // In a fresh "burst" window, "minute" alone denies, with its own wait.
    now += 7000;
    const minuteOnly = await get('b');
    expectDenied(minuteOnly);
    expect(minuteOnly.headers['retry-after']).toBe('40');
    expect(minuteOnly.headers.ratelimit).toBe('"burst";r=1;t=0, "minute";r=0;t=40');
    expect(json(minuteOnly)).toEqual(EXPECTED.tooManyRequests(['minute'], 'minute', 40));
  });
});
