/**
 * Per-request policy choice in core: values compiled once (a bounded cache), a failed choice an
 * `unavailable` decision under the fail mode that applies, never a rejection.
 */
import { describe, expect, it, vi } from 'vitest';
import { createLimiter, type Limiter } from '../limiter/index.js';
import { MemoryStore } from '../stores/memory-store.js';
import { resetWarnings } from '../warn.js';
import { chooseLimit, chooseNamedPolicies, choosePolicyInputs } from './choose-policies.js';
import { createRateLimitHandler } from './options.js';
import {
  CompiledCache,
  MAX_COMPILED_CHOICES,
  type PolicyChoice,
  PolicyChoiceFailure,
  unchosenFailMode,
} from './policy-choice.js';

/** Messages name the adapter `test`; no logger: console, once. */
const TEST_REPORTER = { adapter: 'test', logger: undefined };

type Req = { plan?: string; limit?: unknown };
const target = (failMode: 'open' | 'closed' = 'closed') => ({
  store: new MemoryStore(),
  prefix: undefined,
  prepare: (p: import('../types.js').PolicyInput) => p,
  failMode,
});
const choiceOf = async (answer: unknown) => (await answer) as PolicyChoice | PolicyChoiceFailure;

describe('compiled once per value', () => {
  it('1000 requests over 3 limits compile 3 limiters, and the same limit gets the same limiter', async () => {
    const cache = new CompiledCache<Limiter>();
    const choose = chooseLimit<Req>(
      (req) => req.limit,
      (limit) => ({ name: 'default', limit, window: '1m' }),
      target(),
      TEST_REPORTER,
      cache,
    );
    const seen = new Map<number, Limiter>();
    for (let i = 0; i < 1000; i++) {
      const limit = [5, 10, 20][i % 3]!;
      const choice = (await choiceOf(choose({ limit }))) as PolicyChoice;
      expect(choice.limiter.policy('default').limit).toBe(limit);
      if (seen.has(limit)) expect(choice.limiter).toBe(seen.get(limit));
      seen.set(limit, choice.limiter);
    }
    expect(cache.compilations).toBe(3);
  });

  it('the cache is bounded: past its size the oldest value goes and is compiled again', () => {
    const cache = new CompiledCache<number>(MAX_COMPILED_CHOICES);
    for (let i = 0; i < MAX_COMPILED_CHOICES + 10; i++) cache.get(i, () => i);
    expect(cache.size).toBe(MAX_COMPILED_CHOICES);
    expect(cache.compilations).toBe(MAX_COMPILED_CHOICES + 10);
    cache.get(0, () => 0);
    expect(cache.compilations).toBe(MAX_COMPILED_CHOICES + 11);
    cache.get(MAX_COMPILED_CHOICES + 9, () => -1);
    expect(cache.compilations).toBe(MAX_COMPILED_CHOICES + 11);
  });

  it('policy inputs: the same array, or an equal one, is compiled once; a bad policy is a failure, not kept', async () => {
    const cache = new CompiledCache<Limiter>();
    const pro = [{ name: 'pro', limit: 10, window: '1m' }];
    const choose = choosePolicyInputs<Req>(
      (req) =>
        req.plan === 'bad'
          ? [{ name: 'x', limit: -1, window: '1m' }]
          : req.plan === 'pro'
            ? pro
            : [{ name: 'free', limit: 3, window: '1m' }],
      target(),
      TEST_REPORTER,
      cache,
    );
    for (let i = 0; i < 50; i++) {
      await choose({ plan: 'pro' });
      await choose({ plan: 'free' });
    }
    expect(cache.compilations).toBe(2);
    resetWarnings();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const bad = await choiceOf(choose({ plan: 'bad' }));
    warn.mockRestore();
    expect(bad).toBeInstanceOf(PolicyChoiceFailure);
    expect((bad as PolicyChoiceFailure).decision).toMatchObject({ allowed: false, outcome: 'unavailable' });
    expect(cache.size).toBe(2);
  });
});

describe('which fail mode applies when no policy could be chosen', () => {
  it('open only when every candidate fails open; local counts as closed', () => {
    expect(unchosenFailMode([{ failMode: 'open' }, { failMode: 'open' }])).toBe('open');
    expect(unchosenFailMode([{ failMode: 'open' }, { failMode: 'closed' }])).toBe('closed');
    expect(unchosenFailMode([{ failMode: 'open' }, { failMode: 'local' }])).toBe('closed');
    expect(unchosenFailMode([])).toBe('closed');
  });

  it('names of a shared limiter: the limiter policies at the time of the request decide', async () => {
    const limiter = createLimiter({ policies: [{ name: 'a', limit: 1, window: '1m', failMode: 'open' }] });
    const choose = chooseNamedPolicies<Req>(limiter, () => ['nope'], TEST_REPORTER);
    resetWarnings();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(((await choiceOf(choose({}))) as PolicyChoiceFailure).decision.allowed).toBe(true);
    limiter.updatePolicies([{ name: 'a', limit: 1, window: '1m', failMode: 'closed' }]);
    expect(((await choiceOf(choose({}))) as PolicyChoiceFailure).decision.allowed).toBe(false);
    // A name added by updatePolicies can be chosen.
    limiter.updatePolicies([
      { name: 'a', limit: 1, window: '1m' },
      { name: 'nope', limit: 1, window: '1m' },
    ]);
    expect(await choiceOf(choose({}))).toMatchObject({ policyNames: ['nope'] });
    warn.mockRestore();
  });
});

describe('construction', () => {
  it('a limit function with a bad window throws at construction, naming the field', () => {
    expect(() => createRateLimitHandler({ limit: () => 5, window: 'soon' }, 'test')).toThrow(/window.*soon/);
  });

  it('a limit function without window throws at construction', () => {
    expect(() => createRateLimitHandler({ limit: () => 5 }, 'test')).toThrow(/"window" is required/);
  });

  it('a policies function with a shared limiter refuses the options that belong to the limiter', () => {
    const limiter = createLimiter({ policies: [{ name: 'a', limit: 1, window: '1m' }] });
    expect(() => createRateLimitHandler({ limiter, policies: () => ['a'], prefix: 'x' }, 'test')).toThrow(
      /"prefix".*shared "limiter"/,
    );
  });

  it('a limit function never rejects limitRequest, even when it throws', async () => {
    const handler = createRateLimitHandler<Req>(
      {
        limit: () => {
          throw new TypeError('boom');
        },
        window: '1m',
      },
      'test',
    );
    resetWarnings();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const result = await handler.limitRequest({}, { method: 'GET', path: '/', ip: '127.0.0.1' });
    warn.mockRestore();
    expect(result?.verdict.status).toBe(503);
    expect(result?.decision).toMatchObject({ outcome: 'unavailable', source: 'fail-closed', results: [] });
  });
});

describe('policy inputs with functions in them', () => {
  const request = { method: 'GET', path: '/', ip: '127.0.0.1' };
  const admitted = async (
    handler: { limitRequest: (req: Req, info: typeof request) => unknown },
    plan: string,
    n: number,
  ) => {
    let count = 0;
    for (let i = 0; i < n; i++) {
      const result = (await handler.limitRequest({ plan }, { ...request, ip: `10.0.0.${plan.length}` })) as
        | { decision: { allowed: boolean } }
        | undefined;
      if (result?.decision.allowed) count++;
    }
    return count;
  };

  it('two tiers that differ only by their cost function are two limiters', async () => {
    const handler = createRateLimitHandler<Req>(
      {
        policies: (req) => [
          { name: 'api', limit: 10, window: '1m', cost: req.plan === 'pro' ? () => 1 : () => 5 },
        ],
      },
      'test',
    );
    expect(await admitted(handler, 'pro', 12)).toBe(10);
    expect(await admitted(handler, 'free', 12)).toBe(2);
  });

  it('a cost function made per request is the cost of that request, not of the first one', async () => {
    const handler = createRateLimitHandler<Req>(
      {
        policies: (req) => {
          const cost = req.plan === 'one' ? 1 : 3;
          return [{ name: 'api', limit: 10, window: '1m', cost: () => cost }];
        },
      },
      'test',
    );
    // One client (plans 'one' and 'thr' share the identity): 1 unit, then 3 units a request.
    expect(await admitted(handler, 'one', 1)).toBe(1);
    expect(await admitted(handler, 'thr', 30)).toBe(3);
  });

  it('the same function in an equal list compiles once', async () => {
    const cache = new CompiledCache<Limiter>();
    const costOf = () => 2;
    const choose = choosePolicyInputs<Req>(
      () => [{ name: 'api', limit: 10, window: '1m', cost: costOf }],
      target(),
      TEST_REPORTER,
      cache,
    );
    for (let i = 0; i < 20; i++) await choose({});
    expect(cache.compilations).toBe(1);
  });
});

describe('a cost record beside policies chosen per request', () => {
  const request = { method: 'GET', path: '/', ip: '127.0.0.1' };

  it('names policies of every tier: each request is charged by the entries of its own policies', async () => {
    const handler = createRateLimitHandler<Req>(
      {
        policies: (req) => [{ name: req.plan === 'pro' ? 'pro' : 'free', limit: 10, window: '1m' }],
        cost: { pro: 1, free: 5 },
      },
      'test',
    );
    const pro = await handler.limitRequest({ plan: 'pro' }, { ...request, ip: '10.0.0.1' });
    const free = await handler.limitRequest({ plan: 'free' }, { ...request, ip: '10.0.0.2' });
    expect(pro?.decision).toMatchObject({ allowed: true, remaining: 9 });
    expect(free?.decision).toMatchObject({ allowed: true, remaining: 5 });
  });

  it('naming no policy a fixed set can apply is an error at construction', () => {
    const limiter = createLimiter({ policies: [{ name: 'api', limit: 1, window: '1m' }] });
    expect(() => createRateLimitHandler({ limiter, cost: { nope: 1 } }, 'test')).toThrow(
      /"cost\.nope" names no policy of this middleware \(api\), got 1/,
    );
    expect(() =>
      createRateLimitHandler({ limiter, policies: () => ['api'], cost: { apl: 1 } }, 'test'),
    ).toThrow(/"cost\.apl".*did you mean "api"/);
    expect(() => createRateLimitHandler({ limit: () => 5, window: '1m', cost: { api: 1 } }, 'test')).toThrow(
      /"cost\.api" names no policy of this middleware \(default\)/,
    );
    expect(() =>
      createRateLimitHandler({ limit: 5, window: '1m', cost: { default: 2 } }, 'test'),
    ).not.toThrow();
  });
});
