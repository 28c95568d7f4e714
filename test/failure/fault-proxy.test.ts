/**
 * The fault proxy itself: each mode does what the failure tests rely on, against a real Redis.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

let redis: RedisProcess;
let proxy: FaultProxy;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startFaultProxy({ port: redis.port });
  client = new Redis({ port: proxy.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  await client.connect();
});

afterAll(async () => {
  client?.disconnect();
  await proxy?.close();
  await redis?.stop();
});

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t0 };
}

describe('fault proxy', () => {
  it('passes traffic through and counts bytes', async () => {
    proxy.setMode('pass');
    proxy.setLatency(0);
    proxy.resetCounters();
    expect(await client.set('k', 'v')).toBe('OK');
    expect(await client.get('k')).toBe('v');
    expect(proxy.counters.bytesUp).toBeGreaterThan(0);
    expect(proxy.counters.bytesDown).toBeGreaterThan(0);
  });

  it('adds latency in both directions', async () => {
    proxy.setLatency(60);
    const { ms } = await timed(() => client.ping());
    proxy.setLatency(0);
    // one round trip = 2 x 60 ms; allow scheduling slack above
    expect(ms).toBeGreaterThanOrEqual(115);
    expect(ms).toBeLessThan(1000);
  });

  it('blackhole holds every byte, keeps the socket open, and delivers in order when lifted', async () => {
    proxy.setMode('blackhole');
    let settled = false;
    const pending = client.incr('bh').then((v) => {
      settled = true;
      return v;
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    expect(proxy.counters.open).toBeGreaterThanOrEqual(1);
    // the write never reached Redis while held
    const direct = new Redis({ port: redis.port, host: '127.0.0.1' });
    expect(await direct.get('bh')).toBeNull();
    proxy.setMode('pass');
    expect(await pending).toBe(1);
    expect(await direct.get('bh')).toBe('1');
    direct.disconnect();
  });

  it('reset destroys open connections and refuses new ones until lifted', async () => {
    const resetsBefore = proxy.counters.resets;
    const closed = new Promise<void>((r) => client.once('close', () => r()));
    proxy.setMode('reset');
    await closed;
    expect(proxy.counters.resets).toBeGreaterThan(resetsBefore);
    await expect(client.ping()).rejects.toThrow();
    proxy.setMode('pass');
    // ioredis reconnects by itself once connections are accepted again
    await expect.poll(() => client.status, { timeout: 5000 }).toBe('ready');
    expect(await client.ping()).toBe('PONG');
  });
});
