/**
 * Policies chosen per request, one scenario table run against every adapter over real HTTP on
 * 127.0.0.1 (memory store, injected clock): `policies` as a function naming a shared limiter's
 * policies (sync and async), `limit` as a function with the shorthand, and functions that throw
 * or answer a bad value (the request is `unavailable` under its fail mode, reported once).
 */
import { createLimiter, type Limiter, MemoryStore, type PolicyInput, WARNING_CODES } from '@sluice/core';
import { resetWarnings } from '@sluice/core/adapter';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { EXPECTED } from '../support/expected.js';
import { HARNESSES, type Mount, type NeutralOptions, type NeutralRequest, type Served } from './adapters.js';
import { json, type Reply, request } from './client.js';

/** A start time on a 10 s boundary, so fixed windows start with it. */
const T0 = 1_800_000_000_000;

interface World {
  now: number;
  limiter(policies: readonly PolicyInput[]): Limiter;
}

function world(): World {
  const w: World = {
    now: T0,
    limiter(policies) {
      const clock = () => w.now;
      return createLimiter({ policies, store: new MemoryStore({ clock }), clock });
    },
  };
  return w;
}

interface Client {
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
}

interface Scenario {
  name: string;
  mount: Mount;
  options(w: World): NeutralOptions;
  run(client: Client, w: World): Promise<void>;
}

const PLANS: readonly PolicyInput[] = [
  { name: 'pro', algorithm: 'fixed-window', limit: 5, window: '10s' },
  { name: 'free', algorithm: 'fixed-window', limit: 2, window: '10s' },
];
const byKey = (req: NeutralRequest) => {
  const value = req.header('x-api-key');
  return value === undefined ? undefined : { kind: 'key' as const, value };
};
const plan = (req: NeutralRequest) => (req.header('x-plan') === 'pro' ? ['pro'] : ['free']);
const rateLimitOf = (reply: Reply) => (json(reply) as { rateLimit: Record<string, unknown> }).rateLimit;

/** `count` requests admitted under `policy` (limit `limit`), then one 429 naming it. */
async function expectPlan(client: Client, headers: Record<string, string>, policy: string, limit: number) {
  for (let i = 1; i <= limit; i++) {
    const reply = await client.get('/items/1', headers);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.headers['ratelimit-policy']).toBe(`"${policy}";q=${limit};w=10`);
    expect(rateLimitOf(reply)).toMatchObject({ allowed: true, policy, remaining: limit - i });
  }
  const denied = await client.get('/items/1', headers);
  expect(denied.status).toBe(429);
  expect(json(denied)).toEqual(EXPECTED.tooManyRequests([policy], policy, 10));
}

/** Every `console.warn` line of `run`, so a coded warning can be counted. */
async function warningsOf(run: () => Promise<void>): Promise<string[]> {
  resetWarnings();
  const spy = vi.spyOn(console, 'warn').mockImplementation(() => {});
  try {
    await run();
    return spy.mock.calls.map((call) => String(call[0]));
  } finally {
    spy.mockRestore();
  }
}

const choiceWarnings = (lines: readonly string[]) =>
  lines.filter((line) => line.includes(WARNING_CODES.POLICY_CHOICE_FAILED));

/** A chooser that fails, and what it must do with the request. */
function failingChoice(
  name: string,
  choose: (req: NeutralRequest) => never | readonly string[] | Promise<readonly string[]>,
  failMode: 'open' | 'closed',
): Scenario {
  return {
    name: `policies function that ${name}: unavailable under ${failMode}, one coded warning, no crash`,
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter(PLANS.map((p) => ({ ...p, failMode }))),
      identity: byKey,
      policies: choose as never,
    }),
    async run(client) {
      const lines = await warningsOf(async () => {
        for (let i = 0; i < 3; i++) {
          const reply = await client.get('/items/1', { 'x-api-key': 'k' });
          if (failMode === 'closed') {
            expect(reply.status).toBe(503);
            expect(json(reply)).toEqual(EXPECTED.unavailable());
            expect(reply.headers['cache-control']).toBe('no-store');
          } else {
            expect(reply.status).toBe(200);
            expect(rateLimitOf(reply)).toMatchObject({ allowed: true, outcome: 'unavailable' });
          }
        }
      });
      const coded = choiceWarnings(lines);
      expect(coded).toHaveLength(1);
      expect(coded[0]).toContain('"policies"');
      // The identity never reaches the log.
      expect(coded[0]).not.toContain('secret-key');
    },
  };
}

/** The limiter of the settle scenario, for its peeks. */
let settledLimiter: Limiter | undefined;

/** Waits until `done()` holds (a settle runs after the response, so after the client has it). */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await done()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const SCENARIOS: Scenario[] = [
  {
    name: 'policies as a function: each request gets its plan, counted apart',
    mount: 'route',
    options: (w) => ({ limiter: w.limiter(PLANS), identity: byKey, policies: plan }),
    async run(client) {
      await expectPlan(client, { 'x-api-key': 'a', 'x-plan': 'pro' }, 'pro', 5);
      await expectPlan(client, { 'x-api-key': 'b' }, 'free', 2);
      // The same identity on the other plan is counted under that plan's policy.
      await expectPlan(client, { 'x-api-key': 'a' }, 'free', 2);
    },
  },
  {
    name: 'policies as an async function',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter(PLANS),
      identity: byKey,
      policies: async (req) => {
        await new Promise((done) => setTimeout(done, 1));
        return plan(req);
      },
    }),
    async run(client) {
      await expectPlan(client, { 'x-api-key': 'a', 'x-plan': 'pro' }, 'pro', 5);
      await expectPlan(client, { 'x-api-key': 'b' }, 'free', 2);
    },
  },
  {
    name: 'policies as a function, mounted app-wide and on the route: each request charged once',
    mount: 'both',
    options: (w) => ({ limiter: w.limiter(PLANS), identity: byKey, policies: plan }),
    async run(client) {
      await expectPlan(client, { 'x-api-key': 'a', 'x-plan': 'pro' }, 'pro', 5);
    },
  },
  {
    name: 'policies as a function with shadow: the chosen policy decides, its denials pass',
    mount: 'route',
    options: (w) => ({ limiter: w.limiter(PLANS), identity: byKey, policies: plan, shadow: true }),
    async run(client) {
      const lines = await warningsOf(async () => {
        for (let i = 0; i < 3; i++) {
          const reply = await client.get('/items/1', { 'x-api-key': 'b' });
          expect(reply.status).toBe(200);
          expect(rateLimitOf(reply)).toMatchObject({ allowed: true, policy: 'free', shadowed: i === 2 });
        }
      });
      expect(choiceWarnings(lines)).toEqual([]);
    },
  },
  {
    name: 'policies as a function with skipSuccessfulRequests: the chosen policy is settled, only failures count',
    mount: 'route',
    options: (w) => {
      const limiter = w.limiter(PLANS);
      settledLimiter = limiter;
      return { limiter, identity: byKey, policies: plan, skipSuccessfulRequests: true };
    },
    async run(client) {
      const free = { 'x-api-key': 'b' };
      const remaining = async () =>
        (
          await (settledLimiter as Limiter).peek({
            identity: { kind: 'key', value: 'b' },
            policies: ['free'],
          })
        ).remaining;
      for (let i = 0; i < 4; i++) {
        expect((await client.get('/items/1', free)).status).toBe(200);
        await until(async () => (await remaining()) === 2, 'the refund');
      }
      for (let i = 0; i < 2; i++)
        expect((await client.get('/items/1', { ...free, 'x-status': '401' })).status).toBe(401);
      expect((await client.get('/items/1', free)).status).toBe(429);
    },
  },
  {
    name: 'limit as a function with the shorthand and skipSuccessfulRequests: settled by the limit compiled for it',
    mount: 'route',
    nest: false,
    options: () => ({
      limit: (req) => (req.header('x-plan') === 'pro' ? 3 : 1),
      window: '10s',
      identity: byKey,
      skipSuccessfulRequests: true,
    }),
    async run(client) {
      const pro = { 'x-api-key': 'a', 'x-plan': 'pro' };
      // Three units, each request refunded after it succeeded: more than three pass.
      for (let i = 0; i < 5; i++) {
        const reply = await client.get('/items/1', pro);
        expect(reply.status, `request ${i + 1}`).toBe(200);
        expect(reply.headers.ratelimit).toMatch(/^"default";r=2;/);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  },
  {
    name: 'limit as a function with the shorthand: a limit per request, compiled once per value',
    mount: 'route',
    options: () => ({
      limit: (req) => (req.header('x-plan') === 'pro' ? 5 : 2),
      window: '10s',
      identity: byKey,
    }),
    async run(client) {
      for (let i = 1; i <= 5; i++) {
        const reply = await client.get('/items/1', { 'x-api-key': 'a', 'x-plan': 'pro' });
        expect(reply.status).toBe(200);
        expect(reply.headers['ratelimit-policy']).toMatch(/^"default";q=5;w=/);
      }
      const free = await client.get('/items/1', { 'x-api-key': 'b' });
      expect(free.headers['ratelimit-policy']).toMatch(/^"default";q=2;w=/);
    },
  },
  {
    name: 'limit function that answers 0: 503 under the default fail mode (closed), one coded warning',
    mount: 'route',
    options: () => ({ limit: () => 0, window: '10s' }),
    async run(client) {
      const lines = await warningsOf(async () => {
        for (let i = 0; i < 2; i++) {
          const reply = await client.get('/items/1');
          expect(reply.status).toBe(503);
          expect(json(reply)).toEqual(EXPECTED.unavailable());
        }
      });
      const coded = choiceWarnings(lines);
      expect(coded).toHaveLength(1);
      expect(coded[0]).toContain('"limit"');
    },
  },
  {
    name: 'limit function that throws, with failMode open: admitted as unavailable',
    mount: 'route',
    options: () => ({
      limit: () => {
        throw new Error('plan lookup failed for secret-key');
      },
      window: '10s',
      failMode: 'open',
    }),
    async run(client) {
      const lines = await warningsOf(async () => {
        const reply = await client.get('/items/1');
        expect(reply.status).toBe(200);
        expect(rateLimitOf(reply)).toMatchObject({ allowed: true, outcome: 'unavailable' });
      });
      expect(choiceWarnings(lines)).toHaveLength(1);
      expect(lines.join('\n')).not.toContain('secret-key');
    },
  },
  failingChoice(
    'throws',
    () => {
      throw new Error('no plan for secret-key');
    },
    'closed',
  ),
  failingChoice('rejects', () => Promise.reject(new Error('no plan for secret-key')), 'closed'),
  failingChoice('answers an unknown policy name', () => ['enterprise'], 'closed'),
  failingChoice('answers a non-array', () => 'pro' as never, 'open'),
  failingChoice('answers an empty list', () => [], 'open'),
];

describe.each(HARNESSES)('$name', (harness) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  for (const scenario of SCENARIOS) {
    test(scenario.name, async () => {
      const w = world();
      served = await harness.serve(scenario.options(w), scenario.mount);
      const base = served.url;
      await scenario.run({ get: (path, headers) => request(`${base}${path}`, { headers }) }, w);
    });
  }
});
