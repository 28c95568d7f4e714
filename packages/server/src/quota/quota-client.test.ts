/**
 * `QuotaClient` against a real server over gRPC on 127.0.0.1: no share before the first
 * assignment; then admission from the share; the server gone, the last share until its TTL, then
 * none (the caller's fail mode); bad options refused at construction, naming them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RuntimeDir, runtimeDir, serviceEnv, startInProcess } from '../harness.test-support.js';
import type { RunningServer } from '../server.js';
import { QuotaClient } from './quota-client.js';

const CONFIG = `
domain: regions
descriptors:
  - key: api
    rate_limit: { unit: second, requests_per_unit: 50 }
`;

let dir: RuntimeDir | undefined;
let server: RunningServer | undefined;
let client: QuotaClient | undefined;

afterEach(async () => {
  client?.close();
  await server?.close();
  dir?.remove();
  client = undefined;
  server = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(10);
  }
}

describe('QuotaClient', () => {
  it('admits from its share, keeps it until its TTL once the server is gone, then has none', async () => {
    // The client's clock is moved by hand (refill, TTL); its reports and the server run in real time.
    let nowMs = Date.now();
    dir = runtimeDir({ 'regions.yaml': CONFIG });
    server = await startInProcess(serviceEnv(dir, { SLUICE_QUOTA_TTL_MS: '800' }));
    client = new QuotaClient({
      address: `127.0.0.1:${server.grpcPort}`,
      domain: 'regions',
      reportIntervalMs: 100,
      clock: () => nowMs,
    });
    const bucket = client.bucket({ api: 'search' });
    expect(bucket.take()).toBe('unassigned');
    await waitFor(() => bucket.share() === 50);
    nowMs += 200; // 10 tokens at 50/s
    const verdicts = Array.from({ length: 20 }, () => bucket.take());
    const allowed = verdicts.filter((v) => v === 'allowed').length;
    expect(allowed).toBeGreaterThanOrEqual(9);
    expect(allowed).toBeLessThanOrEqual(12);
    expect(verdicts.filter((v) => v === 'denied').length).toBe(20 - allowed);

    // Every assignment the client holds was sent for at or before `goneAtMs`.
    await sleep(300);
    const goneAtMs = nowMs;
    await server.close();
    server = undefined;
    nowMs = goneAtMs + 300;
    expect(bucket.share()).toBe(50);
    nowMs = goneAtMs + 800;
    expect(bucket.share()).toBeUndefined();
    expect(bucket.take()).toBe('unassigned');
  });

  it('refuses bad options at construction, naming them', () => {
    const ok = { address: '127.0.0.1:1', domain: 'regions' };
    expect(() => new QuotaClient({ ...ok, address: 'nowhere' })).toThrow(/"address" must be host:port/);
    expect(() => new QuotaClient({ ...ok, domain: '' })).toThrow(/"domain"/);
    expect(() => new QuotaClient({ ...ok, clientId: 'eu west' })).toThrow(/"clientId".*no spaces/);
    expect(() => new QuotaClient({ ...ok, reportIntervalMs: 0 })).toThrow(/"reportIntervalMs"/);
  });
});
