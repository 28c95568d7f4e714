/**
 * The example apps on Redis Cluster (`REDIS_CLUSTER_NODES`): one node of every example app,
 * all sharing one 3 + 3 Cluster. The global limit holds across apps, the multi-policy route is
 * all or nothing, and when the primary holding a tenant's slot dies, `/strict` answers 503 and
 * `/lenient` 200 from their fail modes until the replica takes over, then 200 again.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterValue, json, type Reply, request } from '../integration/client.js';
import { type AppNode, EXAMPLE_APPS, startApps, stopApps } from '../support/apps.js';
import { EXPECTED } from '../support/expected.js';
import { expectLeasedBounds } from '../support/leased-route.js';
import {
  expectAbortFreesSlot,
  expectAbortGivesTurnBack,
  expectConcurrentLimit,
  expectQueuedTurns,
} from '../support/overload-routes.js';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';
import { expectGenerateSettles, expectLoginCountsFailures } from '../support/settle-routes.js';

/**
 * The store deadline of every node, as in the single-Redis suite: core's default (100 ms)
 * is meant for a quiet server, and on a shared 2-core machine scheduling delays alone would
 * turn into 503s. With it, a 503 means the limiter could not decide, never a busy machine.
 */
const TIMEOUT_MS = 1000;

let cluster: RedisCluster;
let nodes: AppNode[] = [];
const prefix = `itc-${randomUUID().slice(0, 8)}`;
const apiKey = () => `itc-${randomUUID()}`;
/** The API key every node's SLUICE_DENY_LIST names. */
const DENIED_KEY = `itc-denied-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  cluster = await startRedisCluster();
  const names = EXAMPLE_APPS.map((app) => app.name);
  nodes = await startApps(names.length >= 2 ? names : [names[0]!, names[0]!], {
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    SLUICE_PREFIX: prefix,
    SLUICE_TIMEOUT_MS: String(TIMEOUT_MS),
    SLUICE_DENY_LIST: `${DENIED_KEY},203.0.113.0/24`,
  });
  // Each node's Cluster client is connected and has loaded the script before the bursts.
  for (const node of nodes) {
    const deadline = Date.now() + 20_000;
    while ((await request(`${node.url}/strict`, { headers: { 'x-api-key': 'warm-up' } })).status !== 200) {
      if (Date.now() > deadline) throw new Error(`${node.app}:${node.port} not deciding from the Cluster`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});
afterAll(async () => {
  await stopApps(nodes);
  await cluster?.stop();
});

const nodeFor = (i: number) => nodes[i % nodes.length]!;

/** The primary holding the keys written for `key` (found by scanning each primary). */
async function primaryHolding(key: string): Promise<number | undefined> {
  const { primaries } = await cluster.topology();
  const before = new Map<number, number>();
  for (const p of primaries) {
    const client = new Redis({ host: '127.0.0.1', port: p.port });
    before.set(p.port, (await client.keys(`${prefix}:*`)).length);
    client.disconnect();
  }
  // The transfers policy (sliding window, 60 s) keeps its key for a minute.
  const reply = await request(`${nodeFor(0).url}/transfers/1`, {
    method: 'POST',
    headers: { 'x-api-key': key },
  });
  expect(reply.status, reply.text).toBe(200);
  for (const p of primaries) {
    const client = new Redis({ host: '127.0.0.1', port: p.port });
    const after = (await client.keys(`${prefix}:*`)).length;
    client.disconnect();
    if (after > before.get(p.port)!) return p.port;
  }
  return undefined;
}

describe(`example apps on Redis Cluster (${EXAMPLE_APPS.map((a) => a.name).join(', ')})`, () => {
  it('300 requests, 24 in flight across the apps, one API key: 20 plus refill admitted, the rest 429', async () => {
    const key = apiKey();
    const started = performance.now();
    const replies: Reply[] = [];
    let next = 0;
    // Bounded concurrency: contention across every node without drowning a shared 2-core machine.
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < 300) {
          const i = next++;
          replies.push(await request(`${nodeFor(i).url}/limited`, { headers: { 'x-api-key': key } }));
        }
      }),
    );
    const elapsedSeconds = (performance.now() - started) / 1000;
    const statuses: Record<number, number> = {};
    for (const r of replies) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    const admitted = statuses[200] ?? 0;
    const unavailable = statuses[503] ?? 0;
    console.log(
      `[cluster apps] ${nodes.length} nodes, 300 requests in ${elapsedSeconds.toFixed(2)} s: ${JSON.stringify(statuses)}`,
    );
    // Every request decided: 200 or 429, no 503 (a CROSSSLOT or a missed deadline would be one).
    expect(unavailable).toBe(0);
    expect(admitted + (statuses[429] ?? 0)).toBe(300);
    // The bucket is fresh (a new API key) and full: its 20 units go before any 429.
    expect(admitted).toBeGreaterThanOrEqual(20);
    // The global limit across every app: never more than the bucket plus its refill, 1/s from
    // the first charge, which Redis made within the measured interval (Redis TIME on this
    // machine). The script's slack (one microsecond's refill) never adds a whole unit.
    expect(admitted).toBeLessThanOrEqual(20 + Math.ceil(elapsedSeconds));
  });

  it('POST /generate settles each reservation to the units used on Cluster (one settle call per request)', async () => {
    await expectGenerateSettles(nodeFor, apiKey());
  });

  it('POST /login counts only failed logins on Cluster', async () => {
    await expectLoginCountsFailures(nodeFor, apiKey());
  });

  it('GET /leased across the apps on Cluster: at most burst + 10/s x T admitted, at least burst - nodes x 10, 200 or 429 only', async () => {
    await expectLeasedBounds(nodes, apiKey(), { streamMs: 2000 });
  });

  it('GET /concurrent across the apps on Cluster: 3 in flight, the 4th 429 with qu="concurrent-requests", then 3 new ones at once', async () => {
    await expectConcurrentLimit(nodeFor, apiKey());
  });

  it('GET /concurrent across the apps on Cluster: a client abort mid-request frees its slot once the handler is done', async () => {
    await expectAbortFreesSlot(nodeFor, apiKey());
  });

  it('GET /queued across the apps on Cluster: admitted at their turns, none early, at most 50 ms late; past 1000 ms 429 at once', async () => {
    await expectQueuedTurns(nodeFor, apiKey());
  });

  it('GET /queued across the apps on Cluster: clients that go away while waiting give their turns back', async () => {
    await expectAbortGivesTurnBack(nodeFor, apiKey());
  });

  it('POST /transfers/:id: two policies in one Cluster call, the fourth denied by "transfers" without charging "payments"', async () => {
    const headers = { 'x-api-key': apiKey() };
    for (let i = 1; i <= 3; i++) {
      const reply = await request(`${nodeFor(i).url}/transfers/${i}`, { method: 'POST', headers });
      expect(reply.status, reply.text).toBe(200);
    }
    const fourth = await request(`${nodeFor(4).url}/transfers/4`, { method: 'POST', headers });
    expect(fourth.status).toBe(429);
    const payments = /"payments";r=(\d+)/.exec(fourth.headers.ratelimit ?? '')?.[1];
    expect(Number(payments)).toBeGreaterThanOrEqual(5);
    expect(JSON.parse(fourth.text)['violated-policies']).toEqual(['transfers']);
  });

  it('GET /tiered across the apps: a pro- key gets tier-pro (10 per 60 s), another key tier-free (3 per 60 s)', async () => {
    for (const [key, policy, limit] of [
      [`pro-${apiKey()}`, 'tier-pro', 10],
      [apiKey(), 'tier-free', 3],
    ] as const) {
      for (let i = 0; i < limit; i++) {
        const reply = await request(`${nodeFor(i).url}/tiered`, { headers: { 'x-api-key': key } });
        expect(reply.status, reply.text).toBe(200);
        expect(reply.headers['ratelimit-policy']).toBe(`"${policy}";q=${limit};w=60`);
      }
      const denied = await request(`${nodeFor(limit).url}/tiered`, { headers: { 'x-api-key': key } });
      expect(denied.status).toBe(429);
      expect(JSON.parse(denied.text)['violated-policies']).toEqual([policy]);
    }
  });

  it('GET /health on every node: 200 {"ok":true}, no rate-limit headers, never limited', async () => {
    const replies = await Promise.all(
      nodes.flatMap((node) => Array.from({ length: 30 }, () => request(`${node.url}/health`))),
    );
    for (const reply of replies) {
      expect(reply.status, reply.url).toBe(200);
      expect(json(reply)).toEqual({ ok: true });
      expect(reply.headers.ratelimit).toBeUndefined();
      expect(reply.headers['ratelimit-policy']).toBeUndefined();
    }
  });

  it('SLUICE_DENY_LIST on every node: the listed API key gets 403 problem+json, nothing charged; other keys are served', async () => {
    const headers = { 'x-api-key': DENIED_KEY };
    for (const node of nodes) {
      for (const path of ['/limited', '/strict']) {
        const reply = await request(`${node.url}${path}`, { headers });
        expect(reply.status, `${node.app} ${path}`).toBe(403);
        expect(reply.headers['cache-control']).toBe('no-store');
        expect(reply.headers.ratelimit).toBeUndefined();
        expect(json(reply)).toEqual({
          type: 'about:blank',
          title: 'Forbidden',
          status: 403,
          error: 'forbidden',
        });
      }
      expect((await request(`${node.url}/health`, { headers })).status).toBe(200);
      expect((await request(`${node.url}/limited`, { headers: { 'x-api-key': apiKey() } })).status).toBe(200);
    }
    // Nothing of the denied key reached the Cluster.
    const { primaries } = await cluster.topology();
    for (const p of primaries) {
      const client = new Redis({ host: '127.0.0.1', port: p.port });
      const keys = await client.keys(`${prefix}:*${DENIED_KEY}*`);
      client.disconnect();
      expect(keys).toEqual([]);
    }
  });

  it('GET /transfers/:id/status shares the payments bucket with POST /transfers/:id across the apps', async () => {
    const headers = { 'x-api-key': apiKey() };
    const started = performance.now();
    for (let i = 1; i <= 3; i++) {
      const post = await request(`${nodeFor(i).url}/transfers/${i}`, { method: 'POST', headers });
      expect(post.status, post.text).toBe(200);
    }
    // Three POSTs took 15 of the 20 units; the status route charges 1 from what is left, on any app.
    const statuses: Reply[] = [];
    for (let i = 0; i < 30; i++) {
      const reply = await request(`${nodeFor(i).url}/transfers/${i}/status`, { headers });
      statuses.push(reply);
      if (reply.status === 429) break;
    }
    const elapsedSeconds = (performance.now() - started) / 1000;
    const admitted = statuses.filter((r) => r.status === 200);
    for (const reply of admitted) expect(reply.headers['ratelimit-policy']).toBe('"payments";q=20;w=10');
    const denied = statuses.at(-1)!;
    expect(denied.status, denied.text).toBe(429);
    expect(json(denied)).toMatchObject({ 'violated-policies': ['payments'], policy: 'payments' });
    // The 5 units left plus the refill (2/s) since the first POST; never the 20 of a bucket of its own.
    expect(admitted.length).toBeGreaterThanOrEqual(5);
    expect(admitted.length).toBeLessThanOrEqual(5 + Math.ceil(2 * elapsedSeconds));
  });

  it('GET /shadow is always 200 without headers; /metrics of all apps count exactly the would-denies', async () => {
    // A fixed window of 60 s (Redis time is this machine's): keep every request inside one window.
    const intoWindowMs = Date.now() % 60_000;
    if (intoWindowMs > 55_000) await new Promise((r) => setTimeout(r, 60_500 - intoWindowMs));
    const counted = async (outcome: string) => {
      const replies = await Promise.all(nodes.map((node) => request(`${node.url}/metrics`)));
      let total = 0;
      for (const reply of replies) {
        expect(reply.status).toBe(200);
        expect(reply.text).toContain('sluice_decision_duration_seconds');
        total += counterValue(reply.text, 'sluice_decisions_total', { policy: 'shadow-probe', outcome });
      }
      return total;
    };
    const wouldDenyBefore = await counted('shadow_over_limit');
    const allowedBefore = await counted('allowed');
    const key = apiKey();
    const SENT = 5 + 2 * nodes.length;
    for (let i = 0; i < SENT; i++) {
      const reply = await request(`${nodeFor(i).url}/shadow`, { headers: { 'x-api-key': key } });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.headers.ratelimit).toBeUndefined();
      expect(reply.headers['retry-after']).toBeUndefined();
    }
    // One window of 5 across every app: the rest would have been denied.
    expect((await counted('shadow_over_limit')) - wouldDenyBefore).toBe(SENT - 5);
    expect((await counted('allowed')) - allowedBefore).toBe(5);
    const metrics = await request(`${nodeFor(0).url}/metrics`);
    expect(metrics.text).not.toContain(key);
    expect(metrics.text).not.toContain(prefix);
  });

  it("the tenant's primary dies: /strict 503 and /lenient 200 within the deadline, then 200 again after failover", async () => {
    const key = apiKey();
    const victim = await primaryHolding(key);
    expect(victim).toBeDefined();
    const headers = { 'x-api-key': key };
    const failModeCount = async (node: AppNode, policy: string, outcome: string) =>
      counterValue((await request(`${node.url}/metrics`)).text, 'sluice_decisions_total', {
        policy,
        outcome,
      });
    const closedBefore = await failModeCount(nodeFor(0), 'strict', 'fail_closed');
    const openBefore = await failModeCount(nodeFor(1), 'lenient', 'fail_open');
    await cluster.killNode(victim!);
    const killedAt = performance.now();
    // Let the process be gone (a request sent in the same instant may still be served).
    await new Promise((r) => setTimeout(r, 200));

    const [strict, lenient] = await Promise.all([
      request(`${nodeFor(0).url}/strict`, { headers }),
      request(`${nodeFor(1).url}/lenient`, { headers }),
    ]);
    expect(strict.status, strict.text).toBe(503);
    expect(json(strict)).toEqual(EXPECTED.unavailable());
    expect(lenient.status, lenient.text).toBe(200);
    // Each answered by its fail mode (counted once in /metrics), not by the replica.
    expect(await failModeCount(nodeFor(0), 'strict', 'fail_closed')).toBe(closedBefore + 1);
    expect(await failModeCount(nodeFor(1), 'lenient', 'fail_open')).toBe(openBefore + 1);
    // Within the store deadline plus slack for process scheduling (the single-Redis suite's bound).
    expect(strict.elapsedMs).toBeLessThan(TIMEOUT_MS + EXPECTED.slackMs);
    expect(lenient.elapsedMs).toBeLessThan(TIMEOUT_MS + EXPECTED.slackMs);

    const statuses: number[] = [];
    let backAfterMs: number | undefined;
    while (performance.now() - killedAt < 25_000) {
      const replies = await Promise.all(nodes.map((node) => request(`${node.url}/strict`, { headers })));
      statuses.push(...replies.map((r) => r.status));
      if (replies.every((r) => r.status === 200)) {
        backAfterMs = performance.now() - killedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(
      `[cluster apps] primary killed: /strict answered 503 for ${backAfterMs?.toFixed(0)} ms on every node until the replica served (${statuses.filter((s) => s === 503).length} x 503)`,
    );
    expect(backAfterMs).toBeDefined();
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
  });
});
