/**
 * Limiter overhead: what `check()` costs in this process when the store answers at once, so the
 * cost of Sluice's own code can be told apart from the client and Redis. One check at a time,
 * variants alternated over rounds; nanoseconds per check (median over rounds).
 *
 *   node suites/overhead.mjs --redis-url URL [--quick] [--out file.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadSluice, storageKey } from '../lib/sluice.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const ITERATIONS = opts.quick ? 20_000 : 100_000;
const ROUNDS = opts.quick ? 2 : 5;
const { core, missing } = await loadSluice();
if (typeof core.createLimiter !== 'function' || typeof core.RedisStore !== 'function') {
  const output = {
    suite: 'overhead',
    pending: 'core limiter or RedisStore not built yet',
    missing,
    rows: [],
  };
  if (opts.out) writeFileSync(opts.out, JSON.stringify(output));
  process.exit(0);
}

const ALLOW = { allowed: true, remaining: 999_999, resetMs: 1, retryAfterMs: 0 };
const instantStore = {
  kind: 'instant',
  decide: async (entries) => entries.map(() => ALLOW),
  reset: async () => {},
};

// A real reply of the decide script, replayed by a client that never touches the network.
const client = new Redis(opts['redis-url']);
const policy1 = { name: 'p1', algorithm: 'token-bucket', limit: 1_000_000, window: '1h' };
const policy2 = { name: 'p2', algorithm: 'token-bucket', limit: 2_000_000, window: '1d' };
async function cannedReply(policies) {
  const compiled = policies.map((p) => core.definePolicy(p));
  const entries = compiled.map((p) => ({
    key: storageKey(core, 'canned', 'someone', p),
    policy: p,
    cost: 1,
  }));
  return client.eval(
    core.DECIDE_SCRIPT.source,
    entries.length,
    ...entries.map((e) => e.key),
    ...core.encodeScriptArgs(entries, 'consume'),
  );
}
const reply1 = await cannedReply([policy1]);
const reply2 = await cannedReply([policy1, policy2]);
await client.quit();
const replayClient = (reply) => ({ evalsha: async () => reply, eval: async () => reply });

const ids = Array.from({ length: 10_000 }, (_, i) => ({ identity: `user-${String(i).padStart(5, '0')}` }));
const variants = [
  {
    name: 'instant store, 1 policy, defaults',
    make: () => core.createLimiter({ policies: [policy1], store: instantStore }),
  },
  {
    name: 'instant store, 1 policy, no deny cache, no breaker',
    make: () =>
      core.createLimiter({ policies: [policy1], store: instantStore, denyCache: false, breaker: false }),
  },
  {
    name: 'instant store, 2 policies, defaults',
    make: () => core.createLimiter({ policies: [policy1, policy2], store: instantStore }),
  },
  {
    name: 'MemoryStore, 1 policy, 10k keys',
    make: () => core.createLimiter({ policies: [policy1], store: new core.MemoryStore() }),
  },
  {
    name: 'MemoryStore, 1 policy, one key',
    make: () => core.createLimiter({ policies: [policy1], store: new core.MemoryStore() }),
    oneKey: true,
  },
  {
    name: 'RedisStore on a replaying client, 1 policy',
    make: () =>
      core.createLimiter({
        policies: [policy1],
        store: new core.RedisStore({ client: replayClient(reply1) }),
      }),
  },
  {
    name: 'RedisStore on a replaying client, 2 policies',
    make: () =>
      core.createLimiter({
        policies: [policy1, policy2],
        store: new core.RedisStore({ client: replayClient(reply2) }),
      }),
  },
];
// Reference points: what a timer per call and a bare awaited call cost here.
const references = [
  { name: 'reference: await of a resolved promise', op: () => Promise.resolve() },
  {
    name: 'reference: setTimeout + clearTimeout around an awaited call',
    op: () =>
      new Promise((resolve) => {
        const t = setTimeout(resolve, 100);
        Promise.resolve().then(() => {
          clearTimeout(t);
          resolve();
        });
      }),
  },
];

const cases = [
  ...variants.map((v) => {
    const limiter = v.make();
    return {
      name: v.name,
      op: v.oneKey ? () => limiter.check(ids[0]) : (i) => limiter.check(ids[i % ids.length]),
    };
  }),
  ...references,
];
const perRound = cases.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < cases.length; k++) {
    const index = (k + round) % cases.length;
    const { op } = cases[index];
    for (let i = 0; i < 20_000; i++) await op(i);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i++) await op(i);
    perRound[index].push(Number(process.hrtime.bigint() - t0) / ITERATIONS);
  }
}
const rows = cases.map((c, i) => ({ name: c.name, nsPerCheck: median(perRound[i]), perRound: perRound[i] }));
for (const r of rows) process.stderr.write(`  ${r.name}: ${r.nsPerCheck.toFixed(0)} ns\n`);
const output = { suite: 'overhead', iterations: ITERATIONS, rounds: ROUNDS, rows };
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
else process.stdout.write(`${JSON.stringify(output)}\n`);
process.exit(0);
