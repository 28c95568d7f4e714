import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PolicyError } from '../policy/errors.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Algorithm, DecisionEvent, PolicyInput } from '../types.js';
import { createLimiter, type Limiter } from './create-limiter.js';
import { SwitchableStore, SyncSwitchableStore } from './test-stores.test-support.js';

/**
 * Time a fast-check property of this file may take: its runs take 1-3 s on a quiet 2-core machine
 * and several times that in a full parallel run, past the 5 s default.
 */
const PROPERTY_TIMEOUT_MS = 60_000;

function setup(
  policies: readonly PolicyInput[],
  extra: Parameters<typeof createLimiter>[0] extends infer O ? Partial<O> : never = {},
) {
  const clock = { now: 1_700_000_000_000 };
  const tick = () => clock.now;
  const store = new SwitchableStore(tick);
  const events: DecisionEvent[] = [];
  const limiter = createLimiter({
    policies,
    store,
    clock: tick,
    timeoutMs: 20,
    onDecision: (e) => events.push(e),
    ...extra,
  });
  return { clock, store, limiter, events };
}

const burst: PolicyInput = { name: 'burst', burst: 3, rate: '1/s' };
const minute: PolicyInput = { name: 'minute', algorithm: 'sliding-window', limit: 5, window: '1m' };

/**
 * Three checks of a `local` policy (burst 2, 1/s) while the store cannot decide: two admitted and
 * one denied in-process; then, once `up()` brings the store back, the store decides again with its
 * own untouched state.
 */
async function expectLocalWhileDown(limiter: Limiter, up: () => void): Promise<void> {
  const seen = [];
  for (let i = 0; i < 3; i++) seen.push(await limiter.check({ identity: 'a' }));
  expect(seen.map((d) => [d.allowed, d.outcome, d.source])).toEqual([
    [true, 'allowed', 'local'],
    [true, 'allowed', 'local'],
    [false, 'over_limit', 'local'],
  ]);
  expect(seen[2]!.retryAfterMs).toBe(1000);
  up();
  expect(await limiter.check({ identity: 'a' })).toMatchObject({
    allowed: true,
    source: 'store',
    remaining: 1,
  });
}

describe('createLimiter: decisions', () => {
  it('admits up to the limit, then denies with the wait', async () => {
    const { limiter, clock } = setup([burst]);
    const seen = [];
    for (let i = 0; i < 4; i++) seen.push(await limiter.check({ identity: 'a' }));
    expect(seen.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(seen.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    expect(seen[3]).toMatchObject({
      outcome: 'over_limit',
      policy: 'burst',
      limit: 3,
      retryAfterMs: 1000,
      shadowed: false,
      source: 'store',
    });
    expect(seen[0]).toMatchObject({ outcome: 'allowed', retryAfterMs: 0, source: 'store' });
    expect(seen[0]!.results).toEqual([
      {
        policy: 'burst',
        algorithm: 'token-bucket',
        allowed: true,
        outcome: 'allowed',
        limit: 3,
        windowMs: 3000,
        remaining: 2,
        resetMs: 1000,
        retryAfterMs: 0,
        cost: 1,
        shadow: false,
        failMode: 'closed',
      },
    ]);
    clock.now += 1000;
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'b' })).remaining).toBe(2);
  });

  it('decides several policies in one store call, all or nothing', async () => {
    const { limiter, store } = setup([burst, minute]);
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    store.calls = [];
    const denied = await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(1);
    expect(store.calls[0]!.entries.map((e) => e.policy.name)).toEqual(['burst', 'minute']);
    expect(denied.allowed).toBe(false);
    expect(denied.policy).toBe('burst');
    expect(denied.results.map((r) => [r.policy, r.allowed, r.remaining])).toEqual([
      ['burst', false, 0],
      ['minute', true, 2],
    ]);
    // The minute policy was not charged by the denied request.
    const peeked = await limiter.peek({ identity: 'a', policies: ['minute'] });
    expect(peeked.remaining).toBe(2);
  });

  it('names the allowed policy with the fewest units left, and the denying one with the longest wait', async () => {
    const { limiter, clock } = setup([
      { name: 'big', limit: 100, window: '1s' },
      { name: 'small', algorithm: 'fixed-window', limit: 2, window: '10s' },
      { name: 'slow', burst: 1, rate: '1/30s' },
    ]);
    clock.now = 1_700_000_000_000; // a multiple of 10 s: the fixed window starts now
    const first = await limiter.check({ identity: 'a', policies: ['big', 'small'] });
    expect(first.policy).toBe('small');
    expect(first.remaining).toBe(1);
    await limiter.check({ identity: 'a' });
    const denied = await limiter.check({ identity: 'a' });
    expect(denied.results.filter((r) => !r.allowed).map((r) => [r.policy, r.retryAfterMs])).toEqual([
      ['small', 10_000],
      ['slow', 30_000],
    ]);
    expect(denied.policy).toBe('slow');
    expect(denied.retryAfterMs).toBe(30_000);
    expect(denied.limit).toBe(1);
  });

  it('applies only the named policies, in limiter order', async () => {
    const { limiter } = setup([burst, minute]);
    const d = await limiter.check({ identity: 'a', policies: ['minute', 'burst'] });
    expect(d.results.map((r) => r.policy)).toEqual(['burst', 'minute']);
  });

  it('rejects an explicitly empty policy list instead of admitting unlimited', async () => {
    const { limiter, store } = setup([burst, minute]);
    for (const method of ['check', 'peek'] as const) {
      await expect(limiter[method]({ identity: 'a', policies: [] })).rejects.toThrow(
        new TypeError(
          `limiter.${method}: "policies" must name at least one policy of the limiter (burst, minute), ` +
            'got an empty array (leave it unset for all of them)',
        ),
      );
    }
    expect(store.calls).toHaveLength(0);
  });

  it('peek charges nothing and emits no event', async () => {
    const { limiter, events } = setup([burst]);
    for (let i = 0; i < 5; i++) expect((await limiter.peek({ identity: 'a' })).remaining).toBe(3);
    expect(events).toHaveLength(0);
    await limiter.check({ identity: 'a' });
    expect((await limiter.peek({ identity: 'a' })).remaining).toBe(2);
  });

  it('keeps identities apart, including hostile ones', async () => {
    const { limiter } = setup([{ name: 'one', limit: 1, window: '1m' }]);
    const identities = ['', '{x}', 'x', '}', 'a:b', 'a', 'ä', 'x'.repeat(10_000), 'x'.repeat(10_001)];
    for (const identity of identities) expect((await limiter.check({ identity })).allowed).toBe(true);
    for (const identity of identities) expect((await limiter.check({ identity })).allowed).toBe(false);
  });

  it('route-scoped policies count per route', async () => {
    const { limiter } = setup([{ name: 'per-route', limit: 1, window: '1m', scope: 'route' }]);
    expect((await limiter.check({ identity: 'a', route: 'GET /a' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'a', route: 'GET /b' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'a', route: 'GET /a' })).allowed).toBe(false);
    await limiter.reset('a', 'per-route', 'GET /a');
    expect((await limiter.check({ identity: 'a', route: 'GET /a' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'a', route: 'GET /b' })).allowed).toBe(false);
  });

  it('reset clears one policy or all of them', async () => {
    const { limiter } = setup([burst, minute]);
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    await limiter.reset('a', 'burst');
    let d = await limiter.check({ identity: 'a' });
    expect(d.allowed).toBe(true);
    expect(d.results.map((r) => r.remaining)).toEqual([2, 1]);
    await limiter.reset('a');
    d = await limiter.check({ identity: 'a' });
    expect(d.results.map((r) => r.remaining)).toEqual([2, 4]);
  });

  it('exposes its policies', () => {
    const { limiter } = setup([burst, minute], { prefix: 'app' });
    expect(limiter.prefix).toBe('app');
    expect(limiter.policies.map((p) => p.name)).toEqual(['burst', 'minute']);
    expect(limiter.policy('minute').windowMs).toBe(60_000);
    expect(() => limiter.policy('nope')).toThrow('limiter: unknown policy "nope" (known: burst, minute)');
  });

  it('uses a MemoryStore by default', async () => {
    const limiter = createLimiter({ policies: [{ name: 'one', limit: 1, window: '1m' }] });
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(false);
  });
});

describe('createLimiter: costs', () => {
  const policies: PolicyInput[] = [
    { name: 'payments', burst: 20, rate: '2/s', cost: 5 },
    { name: 'transfers', algorithm: 'sliding-window', limit: 3, window: '60s' },
    { name: 'sized', limit: 10, window: '1s', cost: (d) => (d.route === 'POST /big' ? 4 : 1) },
  ];

  it('takes the descriptor cost, its per-policy record, the policy cost or its function', async () => {
    const { limiter } = setup(policies);
    const costs = async (d: Parameters<typeof limiter.check>[0]) =>
      (await limiter.check(d)).results.map((r) => r.cost);
    expect(await costs({ identity: 'a' })).toEqual([5, 1, 1]);
    expect(await costs({ identity: 'b', route: 'POST /big' })).toEqual([5, 1, 4]);
    expect(await costs({ identity: 'c', cost: 2 })).toEqual([2, 2, 2]);
    expect(await costs({ identity: 'd', cost: { payments: 1.5 } })).toEqual([1.5, 1, 1]);
  });

  it.each([
    [
      { cost: -1 },
      'limiter.check: cost for policy "payments" (descriptor.cost) must be a positive, finite number, got -1',
    ],
    [
      { cost: 0 },
      'limiter.check: cost for policy "payments" (descriptor.cost) must be a positive, finite number, got 0',
    ],
    [
      { cost: Number.NaN },
      'limiter.check: cost for policy "payments" (descriptor.cost) must be a positive, finite number, got NaN',
    ],
    [
      { cost: { transfers: 1.5 } },
      'limiter.check: cost for policy "transfers" (descriptor.cost.transfers) must be a whole number for sliding-window (fractions are for token-bucket and gcra), got 1.5',
    ],
    [
      { cost: { payments: 21 } },
      `limiter.check: cost for policy "payments" (descriptor.cost.payments) must not exceed the policy's burst (20), got 21`,
    ],
    [
      { cost: { transfers: 4 } },
      `limiter.check: cost for policy "transfers" (descriptor.cost.transfers) must not exceed the policy's limit (3), got 4`,
    ],
    [
      { cost: { nope: 1 } },
      'limiter.check: "cost" names unknown policy "nope" (known: payments, transfers, sized)',
    ],
    [
      { policies: ['nope'] },
      'limiter.check: unknown policy "nope" in "policies" (known: payments, transfers, sized)',
    ],
    [
      { identity: 42 },
      `limiter.check: "identity" must be a string or { kind: 'ip' | 'key' | 'app', value: string }, got 42`,
    ],
    [
      { identity: { kind: 'user', value: 'u' } },
      `limiter.check: "identity" must be a string or { kind: 'ip' | 'key' | 'app', value: string }, got an object`,
    ],
    [
      { policies: [] },
      'limiter.check: "policies" must name at least one policy of the limiter (payments, transfers, sized), got an empty array (leave it unset for all of them)',
    ],
    [{ route: 7 }, 'limiter.check: "route" must be a string, got 7'],
    [{ policies: 'payments' }, 'limiter.check: "policies" must be an array of policy names, got "payments"'],
    [{ cost: 'x' }, 'limiter.check: "cost" must be a number or a record of policy name to number, got "x"'],
    [{ cost: null }, 'limiter.check: "cost" must be a number or a record of policy name to number, got null'],
    [
      { cost: [1] },
      'limiter.check: "cost" must be a number or a record of policy name to number, got an array',
    ],
  ] as const)('rejects %j as a programmer error', async (patch, message) => {
    const { limiter, store } = setup(policies);
    await expect(limiter.check({ identity: 'a', ...patch } as never)).rejects.toThrow(new TypeError(message));
    expect(store.calls).toHaveLength(0);
  });

  it('rejects a cost function that returns nonsense', async () => {
    const { limiter } = setup([{ name: 'f', limit: 10, window: '1s', cost: () => Number.POSITIVE_INFINITY }]);
    await expect(limiter.check({ identity: 'a' })).rejects.toThrow(
      `limiter.check: cost for policy "f" (the policy's cost function) must be a positive, finite number, got Infinity`,
    );
  });
});

describe('createLimiter: shadow policies', () => {
  const probe: PolicyInput = {
    name: 'probe',
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    shadow: true,
  };

  it('records a shadow denial without enforcing it, and still charges the enforcing policies', async () => {
    const { limiter, events, store } = setup([burst, probe]);
    const first = await limiter.check({ identity: 'a' });
    expect(first).toMatchObject({ allowed: true, shadowed: false, policy: 'burst', remaining: 2 });
    const second = await limiter.check({ identity: 'a' });
    expect(second).toMatchObject({
      allowed: true,
      outcome: 'allowed',
      shadowed: true,
      policy: 'burst',
      remaining: 1,
    });
    expect(second.results.map((r) => [r.policy, r.allowed, r.shadow])).toEqual([
      ['burst', true, false],
      ['probe', false, true],
    ]);
    expect(events[1]!.metricOutcomes).toEqual([
      { policy: 'burst', outcome: 'allowed' },
      { policy: 'probe', outcome: 'shadow_over_limit' },
    ]);
    const third = await limiter.check({ identity: 'a' });
    expect(third.remaining).toBe(0);
    const fourth = await limiter.check({ identity: 'a' });
    expect(fourth).toMatchObject({ allowed: false, policy: 'burst', shadowed: true });
    // One store call per check, shadow denial or not.
    expect(store.calls.map((c) => c.entries.length)).toEqual([2, 2, 2, 2]);
  });

  it('a limiter of shadow policies only never denies', async () => {
    const { limiter } = setup([probe]);
    await limiter.check({ identity: 'a' });
    const d = await limiter.check({ identity: 'a' });
    expect(d).toMatchObject({
      allowed: true,
      outcome: 'allowed',
      shadowed: true,
      policy: 'probe',
      remaining: 0,
    });
  });

  it('a shadow denial does not feed the deny cache', async () => {
    const { limiter, store } = setup([probe]);
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(3);
  });
});

describe('createLimiter: deny cache', () => {
  it('denies in-process until the store said, for the same or a higher cost', async () => {
    const { limiter, store, clock } = setup([{ name: 'b', burst: 4, rate: '1/s' }]);
    await limiter.check({ identity: 'a', cost: 4 });
    const denied = await limiter.check({ identity: 'a', cost: 2 });
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 2000, source: 'store' });
    store.calls = [];
    clock.now += 500;
    const cached = await limiter.check({ identity: 'a', cost: 2 });
    expect(cached).toMatchObject({
      allowed: false,
      outcome: 'over_limit',
      retryAfterMs: 1500, // the store's 2000, counted down: waiting it, the store admits
      source: 'deny-cache',
    });
    expect((await limiter.check({ identity: 'a', cost: 3 })).source).toBe('deny-cache');
    expect(store.calls).toHaveLength(0);
    // A lower cost might fit: ask the store.
    expect(await limiter.check({ identity: 'a', cost: 1 })).toMatchObject({
      source: 'store',
      allowed: false,
    });
    expect(store.calls).toHaveLength(1);
    // Peek never uses it.
    await limiter.peek({ identity: 'a', cost: 2 });
    expect(store.calls).toHaveLength(2);
  });

  it('goes back to the store once the wait is over, and after a reset', async () => {
    const { limiter, store, clock } = setup([{ name: 'b', burst: 1, rate: '1/s' }]);
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).source).toBe('deny-cache');
    clock.now += 1000;
    store.calls = [];
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: true, source: 'store' });
    await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).source).toBe('deny-cache');
    await limiter.reset('a');
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: true, source: 'store' });
  });

  it('is bounded: the oldest key set goes first', async () => {
    const { limiter, store } = setup([{ name: 'b', burst: 1, rate: '1/m' }], { denyCache: { maxKeys: 2 } });
    for (const id of ['x', 'y', 'z']) {
      await limiter.check({ identity: id });
      await limiter.check({ identity: id });
    }
    store.calls = [];
    expect((await limiter.check({ identity: 'z' })).source).toBe('deny-cache');
    expect((await limiter.check({ identity: 'y' })).source).toBe('deny-cache');
    expect((await limiter.check({ identity: 'x' })).source).toBe('store');
    expect(store.calls).toHaveLength(1);
  });

  it('can be turned off', async () => {
    const { limiter, store } = setup([{ name: 'b', burst: 1, rate: '1/m' }], { denyCache: false });
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(4);
  });

  const algorithms: Algorithm[] = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];

  it(
    'never changes a decision: with and without it, the same answers (property)',
    async () => {
      const step = fc.record({
        identity: fc.constantFrom('a', 'b'),
        cost: fc.integer({ min: 1, max: 3 }),
        advanceMs: fc.oneof(
          fc.constant(0),
          fc.integer({ min: 0, max: 400 }),
          fc.integer({ min: 0, max: 5000 }),
        ),
        policies: fc.constantFrom(['p'], ['q'], ['p', 'q']),
      });
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...algorithms),
          fc.constantFrom(...algorithms),
          fc.array(step, { minLength: 1, maxLength: 60 }),
          async (algoP, algoQ, steps) => {
            const now = { t: 1_700_000_000_123 };
            const clock = () => now.t;
            const policies: PolicyInput[] = [
              { name: 'p', algorithm: algoP, limit: 4, window: '2s' },
              { name: 'q', algorithm: algoQ, limit: 6, window: '5s' },
            ];
            const cached = createLimiter({ policies, clock, store: new MemoryStore({ clock }) });
            const plain = createLimiter({
              policies,
              clock,
              store: new MemoryStore({ clock }),
              denyCache: false,
            });
            for (const s of steps) {
              now.t += s.advanceMs;
              const d = { identity: s.identity, cost: s.cost, policies: s.policies };
              const [x, y] = [await cached.check(d), await plain.check(d)];
              expect(x.allowed).toBe(y.allowed);
              if (x.source === 'deny-cache') expect(x.retryAfterMs).toBeLessThanOrEqual(y.retryAfterMs);
            }
          },
        ),
        { numRuns: 300 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('createLimiter: store failures', () => {
  const closed: PolicyInput = { name: 'strict', limit: 10, window: '1s', failMode: 'closed' };
  const open: PolicyInput = { name: 'lenient', limit: 10, window: '1s', failMode: 'open' };
  const local: PolicyInput = { name: 'local', burst: 2, rate: '1/s', failMode: 'local' };

  it.each(['error', 'hang'] as const)(
    'closed denies as unavailable when the store %ss',
    async (behaviour) => {
      const { limiter, store, events } = setup([closed]);
      store.behaviour = behaviour;
      const started = Date.now();
      const d = await limiter.check({ identity: 'a' });
      expect(Date.now() - started).toBeLessThan(1000);
      expect(d).toMatchObject({
        allowed: false,
        outcome: 'unavailable',
        source: 'fail-closed',
        policy: 'strict',
      });
      expect(d.results[0]).toMatchObject({ allowed: false, outcome: 'unavailable', failMode: 'closed' });
      expect(events[0]!.metricOutcomes).toEqual([{ policy: 'strict', outcome: 'fail_closed' }]);
    },
  );

  it('open admits as unavailable', async () => {
    const { limiter, store, events } = setup([open]);
    store.behaviour = 'hang';
    const d = await limiter.check({ identity: 'a' });
    expect(d).toMatchObject({
      allowed: true,
      outcome: 'unavailable',
      source: 'fail-open',
      policy: 'lenient',
    });
    expect(events[0]!.metricOutcomes).toEqual([{ policy: 'lenient', outcome: 'fail_open' }]);
  });

  it('local decides in-process while the store is down, and the store again afterwards', async () => {
    const { limiter, store } = setup([local], { breaker: false });
    store.behaviour = 'error';
    await expectLocalWhileDown(limiter, () => {
      store.behaviour = 'up';
    });
  });

  it('mixed modes: any enforcing closed policy denies, and nothing is charged locally', async () => {
    const { limiter, store } = setup([closed, open, local], { breaker: false });
    store.behaviour = 'error';
    const d = await limiter.check({ identity: 'a' });
    expect(d).toMatchObject({
      allowed: false,
      outcome: 'unavailable',
      source: 'fail-closed',
      policy: 'strict',
    });
    expect(d.results.map((r) => [r.policy, r.allowed, r.outcome])).toEqual([
      ['strict', false, 'unavailable'],
      ['lenient', true, 'unavailable'],
      ['local', true, 'allowed'],
    ]);
    // The local fallback was only peeked: two units still there for the policies without 'strict'.
    const a = await limiter.check({ identity: 'a', policies: ['lenient', 'local'] });
    const b = await limiter.check({ identity: 'a', policies: ['lenient', 'local'] });
    const c = await limiter.check({ identity: 'a', policies: ['lenient', 'local'] });
    expect([a, b, c].map((x) => [x.allowed, x.source])).toEqual([
      [true, 'local'],
      [true, 'local'],
      [false, 'local'],
    ]);
    expect(c.policy).toBe('local');
    expect(a.outcome).toBe('unavailable'); // admitted, but the store did not decide 'lenient'
  });

  it('a failing shadow policy marks the decision shadowed but does not deny', async () => {
    const { limiter, store } = setup([open, { ...closed, name: 'watch', shadow: true }], { breaker: false });
    store.behaviour = 'error';
    const d = await limiter.check({ identity: 'a' });
    expect(d).toMatchObject({ allowed: true, shadowed: true, source: 'fail-open', policy: 'lenient' });
  });

  it('the breaker opens after repeated failures, probes after the cool-down, and closes on success', async () => {
    const { limiter, store, clock } = setup([closed], { breaker: { failureThreshold: 3, cooldownMs: 1000 } });
    store.behaviour = 'error';
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(3);
    expect(limiter.breakerState).toBe('open');
    for (let i = 0; i < 5; i++) {
      expect((await limiter.check({ identity: 'a' })).outcome).toBe('unavailable');
    }
    expect(store.calls).toHaveLength(3);
    clock.now += 999;
    await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(3);
    clock.now += 1;
    expect(limiter.breakerState).toBe('half-open');
    // The probe fails: open for another cool-down.
    await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(4);
    expect(limiter.breakerState).toBe('open');
    await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(4);
    clock.now += 1000;
    store.behaviour = 'up';
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: true, source: 'store' });
    expect(limiter.breakerState).toBe('closed');
    await limiter.check({ identity: 'a' });
    expect(store.calls).toHaveLength(6);
  });

  it('a deadline miss is unavailable, never over_limit', async () => {
    const { limiter, store } = setup([closed, open], { timeoutMs: 15 });
    store.behaviour = 'hang';
    for (let i = 0; i < 3; i++) {
      const d = await limiter.check({ identity: 'a' });
      expect(d.outcome).toBe('unavailable');
      expect(d.results.every((r) => r.outcome === 'unavailable')).toBe(true);
    }
  });
});

describe('createLimiter: a store that answers synchronously', () => {
  function syncSetup(
    policies: readonly PolicyInput[],
    extra: { breaker?: false | { failureThreshold: number; cooldownMs: number } } = {},
  ) {
    const clock = { now: 1_700_000_000_000 };
    const tick = () => clock.now;
    const store = new SyncSwitchableStore(tick);
    const limiter = createLimiter({ policies, store, clock: tick, ...extra });
    return { clock, store, limiter };
  }
  const closed: PolicyInput = { name: 'strict', limit: 10, window: '1s', failMode: 'closed' };
  const local: PolicyInput = { name: 'local', burst: 2, rate: '1/s', failMode: 'local' };

  it('is asked through checkSync, and the decision is settled one microtask later', async () => {
    const { limiter, store } = syncSetup([burst, minute]);
    let settled: unknown;
    void limiter.check({ identity: 'a' }).then((d) => {
      settled = d;
    });
    await null;
    expect(settled).toMatchObject({ allowed: true, source: 'store', policy: 'burst', remaining: 2 });
    expect(store.syncCalls).toBe(1);
    const peeked = await limiter.peek({ identity: 'a' });
    expect(peeked).toMatchObject({ allowed: true, remaining: 2 });
    expect(store.syncCalls).toBe(2);
  });

  it('a throw is a store failure: fail modes apply and the breaker counts it', async () => {
    const { limiter, store } = syncSetup([closed], { breaker: { failureThreshold: 2, cooldownMs: 1000 } });
    store.behaviour = 'error';
    for (let i = 0; i < 2; i++) {
      expect(await limiter.check({ identity: 'a' })).toMatchObject({
        allowed: false,
        outcome: 'unavailable',
        source: 'fail-closed',
      });
    }
    expect(limiter.breakerState).toBe('open');
    await limiter.check({ identity: 'a' });
    expect(store.syncCalls).toBe(2);
  });

  it('too few verdicts is a store failure, and a local policy decides in-process', async () => {
    const { limiter, store } = syncSetup([local], { breaker: false });
    store.behaviour = 'short';
    await expectLocalWhileDown(limiter, () => {
      store.behaviour = 'up';
    });
  });

  it('rejects programmer errors instead of throwing', async () => {
    const { limiter } = syncSetup([burst]);
    const pending = limiter.check({ identity: 42 as unknown as string });
    await expect(pending).rejects.toThrow(/"identity" must be a string/);
  });
});

describe('createLimiter: events', () => {
  it('emits one event per decision, without identities, to every listener', async () => {
    const { limiter, events } = setup([burst, minute]);
    const extra: DecisionEvent[] = [];
    const off = limiter.onDecision((e) => extra.push(e));
    limiter.onDecision(() => {
      throw new Error('a broken listener changes nothing');
    });
    const secret = 'tenant-secret-identity';
    for (let i = 0; i < 4; i++) await limiter.check({ identity: secret, route: 'GET /secret-route' });
    off();
    await limiter.check({ identity: secret });
    expect(events).toHaveLength(5);
    expect(extra).toHaveLength(4);
    expect(events[3]).toMatchObject({
      policy: 'burst',
      outcome: 'over_limit',
      allowed: false,
      shadowed: false,
      source: 'store',
      metricOutcomes: [
        { policy: 'burst', outcome: 'over_limit' },
        { policy: 'minute', outcome: 'allowed' },
      ],
    });
    expect(events[0]!.durationMs).toBeGreaterThanOrEqual(0);
    const text = JSON.stringify(events);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('secret-route');
    expect(text).not.toContain('sluice:');
  });
});

describe('createLimiter: options', () => {
  it.each([
    [
      { prefix: 'a{b' },
      'createLimiter: "prefix" must be 1-128 characters without whitespace, "{" or "}", got "a{b"',
    ],
    [
      { prefix: '' },
      'createLimiter: "prefix" must be 1-128 characters without whitespace, "{" or "}", got ""',
    ],
    [{ timeoutMs: 0 }, 'createLimiter: "timeoutMs" must be a positive, finite number, got 0'],
    [{ timeoutMs: Number.NaN }, 'createLimiter: "timeoutMs" must be a positive, finite number, got NaN'],
    [
      // Past a timer's range (2^31 - 1 ms) a deadline would fire at once: every check unavailable.
      { timeoutMs: 3e9 },
      'createLimiter: "timeoutMs" must be a positive number of milliseconds up to 2147483647 (a timer\'s range), got 3000000000',
    ],
    [
      { breaker: { failureThreshold: 0 } },
      'createLimiter: "breaker.failureThreshold" must be a positive integer, got 0',
    ],
    [
      { breaker: { cooldownMs: -5 } },
      'createLimiter: "breaker.cooldownMs" must be a positive, finite number, got -5',
    ],
    [
      { denyCache: { maxKeys: 1.5 } },
      'createLimiter: "denyCache.maxKeys" must be a positive integer, got 1.5',
    ],
    [
      { localFallback: { maxKeys: 0 } },
      'createLimiter: "localFallback.maxKeys" must be a positive integer, got 0',
    ],
    [
      { store: {} },
      'createLimiter: "store" must be a Store (an object with decide() and reset()), got an object',
    ],
    [{ clock: 5 }, 'createLimiter: "clock" must be a function returning milliseconds, got 5'],
    [{ onDecision: 5 }, 'createLimiter: "onDecision" must be a function, got 5'],
  ] as const)('rejects %j', (patch, message) => {
    // One options error class everywhere: a TypeError with the code INVALID_OPTIONS.
    expect(() => createLimiter({ policies: [burst], ...patch } as never)).toThrow(
      expect.objectContaining({ name: 'RateLimitOptionsError', code: 'INVALID_OPTIONS', message }),
    );
    expect(() => createLimiter({ policies: [burst], ...patch } as never)).toThrow(TypeError);
  });

  it("names the Sluice option for another library's option or a typo", () => {
    expect(() => createLimiter({ policies: [burst], points: 5 } as never)).toThrow(
      'createLimiter: "points" is not an option of createLimiter(): did you mean "limit"?',
    );
    expect(() => createLimiter({ policies: [burst], timeout: 5 } as never)).toThrow(
      'createLimiter: "timeout" is not an option of createLimiter(): did you mean "timeoutMs"?',
    );
  });

  it('tells a Redis client passed as the store how to wrap it', () => {
    const ioredisLike = { evalsha: async () => 0, eval: async () => 0, sendCommand: () => 0 };
    expect(() => createLimiter({ policies: [burst], store: ioredisLike as never })).toThrow(
      'createLimiter: "store" must be a Store, not a Redis client: wrap it in new RedisStore({ client })',
    );
    const nodeRedisLike = { evalSha: async () => 0, sendCommand: async () => 0 };
    expect(() => createLimiter({ policies: [burst], store: nodeRedisLike as never })).toThrow(
      'wrap it in new RedisStore({ client: fromNodeRedis(client) })',
    );
  });

  it('tells a store written with the old check() method its new name', () => {
    const old = { kind: 'old', check: async () => [], reset: async () => {} };
    expect(() => createLimiter({ policies: [burst], store: old as never })).toThrow(
      'createLimiter: "store" must be a Store: its check() is now called decide(entries, mode, options?) (and checkSync() decideSync())',
    );
  });

  it('rejects bad policies with PolicyError', () => {
    expect(() => createLimiter({ policies: [burst, burst] })).toThrow(PolicyError);
    expect(() => createLimiter({ policies: [] })).toThrow(PolicyError);
    expect(() => createLimiter({ policies: [{ name: 'x', limit: -1, window: '1s' }] })).toThrow(
      'policy "x": "limit" must be a positive integer, got -1',
    );
  });
});
