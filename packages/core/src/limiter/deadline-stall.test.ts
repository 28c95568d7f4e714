/**
 * A deadline counts the store's time, not the time this process was too busy to send the call or
 * read its answer: a check issued just before the event loop stalls for longer than `timeoutMs`
 * (1,000 requests parsed in one turn, a long synchronous handler) is decided by a healthy Redis,
 * never answered `unavailable`; a Redis that really does not answer still times out.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { createRedisStore } from '../node/ioredis.js';
import type { RedisStore } from '../stores/redis-store.js';
import { createLimiter } from './create-limiter.js';

let server: RedisProcess;
let other: Redis;
let store: RedisStore;

beforeAll(async () => {
  // DEBUG SLEEP keeps Redis from answering for a set time, as a busy Redis would.
  server = await startRedis({ args: ['--enable-debug-command', 'yes'] });
  other = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  store = createRedisStore(`redis://127.0.0.1:${server.port}`);
  await other.ping();
});

afterAll(async () => {
  await store?.close();
  other?.disconnect();
  await server?.stop();
});

const TIMEOUT_MS = 200;

/** Keeps this thread busy for `ms`: no timer fires, no socket is read, nothing is sent. */
function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

function limiterOf(prefix: string) {
  return createLimiter({
    store,
    prefix,
    timeoutMs: TIMEOUT_MS,
    breaker: false,
    policies: [{ name: 'api', algorithm: 'token-bucket', burst: 10, rate: '1/s', failMode: 'closed' }],
  });
}

describe('a deadline and a stalled event loop', () => {
  it('a check issued before a stall longer than the deadline is decided by a Redis that answers in time', async () => {
    const limiter = limiterOf('stall-a');
    await limiter.check({ identity: 'warm' }); // scripts loaded, connection up
    // Redis is busy for 400 ms from now; the loop stalls for 300 ms right after the check is issued,
    // so the call leaves this process at about 300 ms and Redis answers at about 400 ms: 100 ms of
    // the store's time, within the 200 ms deadline.
    const busy = other.call('DEBUG', 'SLEEP', '0.4');
    const check = limiter.check({ identity: 'a' });
    stallEventLoop(300);
    const decision = await check;
    await busy;
    expect(decision).toMatchObject({ allowed: true, outcome: 'allowed', source: 'store' });
  });

  it('a Redis that stays silent past the deadline is still unavailable, stall or not', async () => {
    const limiter = limiterOf('stall-b');
    await limiter.check({ identity: 'warm' });
    const busy = other.call('DEBUG', 'SLEEP', '1');
    const started = performance.now();
    const check = limiter.check({ identity: 'b' });
    stallEventLoop(100);
    const decision = await check;
    const elapsed = performance.now() - started;
    await busy;
    expect(decision).toMatchObject({ allowed: false, outcome: 'unavailable' });
    expect(elapsed).toBeLessThan(900);
  });
});
