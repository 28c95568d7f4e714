/**
 * The example-app contract's settle routes, checked over the nodes of a running set of apps
 * (standalone Redis and Cluster suites alike): `POST /generate?used=N` and `POST /login?ok=1|0`.
 */
import { expect } from 'vitest';
import { json, remainingOf, request } from '../integration/client.js';

/** A node to send the i-th request to. */
export type NodeFor = (i: number) => { readonly url: string };

/**
 * `/generate`: each request reserves 100 `llm-tokens` (burst 1000) and settles to `used`, so
 * fifty requests with used=10 pass in a row where ten unsettled ones would exhaust the bucket;
 * one that used 1000 leaves a debt the next requests wait for, Retry-After saying how long.
 */
export async function expectGenerateSettles(nodeFor: NodeFor, key: string): Promise<void> {
  const headers = { 'x-api-key': key };
  for (let i = 0; i < 50; i++) {
    const reply = await request(`${nodeFor(i).url}/generate?used=10`, { method: 'POST', headers });
    expect(reply.status, `request ${i}: ${reply.text}`).toBe(200);
    expect(json(reply)).toEqual({ ok: true, used: 10 });
    expect(reply.headers['ratelimit-policy']).toBe('"llm-tokens";q=1000;w=100');
  }
  const big = await request(`${nodeFor(50).url}/generate?used=1000`, { method: 'POST', headers });
  expect(big.status).toBe(200);
  // Its settle lands after the response: poll until a request meets the debt (at most 2 s).
  let denied: Awaited<ReturnType<typeof request>> | undefined;
  for (let i = 0; i < 40 && denied === undefined; i++) {
    const reply = await request(`${nodeFor(51 + i).url}/generate?used=0`, { method: 'POST', headers });
    if (reply.status === 429) denied = reply;
    else await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(denied?.status).toBe(429);
  // About 1000 - 50 x 10 - 1000 units: 500 owed, plus 100 to reserve, at 10/s.
  const retryAfter = Number(denied?.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(40);
  expect(retryAfter).toBeLessThanOrEqual(110);
  expect(remainingOf(denied?.headers.ratelimit, 'llm-tokens')).toBe(0);
  const bad = await request(`${nodeFor(0).url}/generate?used=1001`, {
    method: 'POST',
    headers: { 'x-api-key': `${key}-b` },
  });
  expect(bad.status).toBe(400);
}

/**
 * `/login`: only failed logins count (5 per 60 s); successful ones are settled to 0, so ten in a
 * row pass; after five failures every login, right or wrong, is 429.
 */
export async function expectLoginCountsFailures(nodeFor: NodeFor, key: string): Promise<void> {
  const headers = { 'x-api-key': key };
  for (let i = 0; i < 10; i++) {
    const reply = await request(`${nodeFor(i).url}/login?ok=1`, { method: 'POST', headers });
    expect(reply.status, `login ${i}: ${reply.text}`).toBe(200);
    expect(json(reply)).toEqual({ ok: true });
  }
  const other = { 'x-api-key': `${key}-f` };
  for (let i = 0; i < 5; i++) {
    const reply = await request(`${nodeFor(i).url}/login?ok=0`, { method: 'POST', headers: other });
    expect(reply.status).toBe(401);
    expect(json(reply)).toEqual({ ok: false });
    expect(remainingOf(reply.headers.ratelimit, 'login')).toBe(4 - i);
  }
  for (const ok of ['1', '0']) {
    const reply = await request(`${nodeFor(5).url}/login?ok=${ok}`, { method: 'POST', headers: other });
    expect(reply.status).toBe(429);
    expect(reply.headers['retry-after']).toBeDefined();
  }
}
