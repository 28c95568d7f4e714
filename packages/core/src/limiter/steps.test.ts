/**
 * The steps of a check on their own: the shape of "the store could not decide" (StoreUnavailable
 * and its cause), the breaker counting it, the local fallback's verdicts riding on it, and the deny
 * cache answering from memory only what the store denied.
 */

import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { PolicyInput, Store, StoreCheckOptions, StoreEntry, StoreMode } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { applyFailModes } from './decision.js';
import { LocalFallback } from './local-fallback.js';
import { type StoreAnswer, StoreUnavailable } from './store-answer.js';
import { CircuitBreaker, StoreCall } from './store-call.js';
import { storeDown } from './test-stores.test-support.js';

const T0 = 1_700_000_000_000;
const entryOf = (input: PolicyInput, key = `k:${input.name}`): StoreEntry => ({
  key,
  policy: definePolicy(input),
  cost: 1,
});
/** The store call's answer, as `check` asks it: now from a store that answers now, else awaited. */
const ask = (
  call: StoreCall,
  entries: readonly StoreEntry[],
  mode: StoreMode,
  options?: StoreCheckOptions,
): StoreAnswer | Promise<StoreAnswer> =>
  call.answersNow ? call.decideNow(entries, mode, options) : call.decide(entries, mode, options);
const bucket = entryOf({ name: 'b', burst: 1, rate: '1/m' });

/** A store whose `decide` does what `answer` says. */
const storeOf = (decide: Store['decide']): Store => ({
  kind: 'test',
  decide,
  reset: () => Promise.resolve(),
});

describe('StoreCall: the deadline', () => {
  it('names why the store could not decide: error, timeout, wrong verdict count', async () => {
    const cause = async (store: Store): Promise<unknown> => {
      const answer = await ask(new StoreCall(store, 10), [bucket], 'consume');
      return answer instanceof StoreUnavailable ? answer.cause : answer.source;
    };
    expect(await cause(storeDown('down'))).toBe('error');
    expect(
      await cause(
        storeOf(() => {
          throw new Error('thrown');
        }),
      ),
    ).toBe('error');
    expect(await cause(storeOf(() => new Promise(() => {})))).toBe('timeout');
    expect(await cause(storeOf(() => Promise.resolve([])))).toBe('wrong-verdict-count');
    expect(await cause(new MemoryStore({ clock: () => T0 }))).toBe('store');
  });

  it('a store that decides in-process and throws is unavailable with cause error, now', () => {
    const throwing: Store = {
      ...storeOf(() => Promise.resolve([])),
      decideSync: () => {
        throw new Error('state corrupted');
      },
    };
    expect(ask(new StoreCall(throwing, 10), [bucket], 'consume')).toMatchObject({ cause: 'error' });
  });

  it('asks a store that decides in-process synchronously: the answer is there now', () => {
    const answer = ask(new StoreCall(new MemoryStore({ clock: () => T0 }), 10), [bucket], 'consume');
    expect(answer).toMatchObject({ source: 'store', verdicts: [{ allowed: true }] });
  });
});

describe('StoreCall: the breaker', () => {
  it('counts StoreUnavailable as a failure, and answers breaker-open without calling', async () => {
    let calls = 0;
    const failing = storeOf(() => {
      calls++;
      return Promise.reject(new Error('down'));
    });
    const layer = new StoreCall(failing, 10, new CircuitBreaker(2, 1000, () => T0));
    for (let i = 0; i < 2; i++)
      expect(await ask(layer, [bucket], 'consume')).toMatchObject({ cause: 'error' });
    expect(await ask(layer, [bucket], 'consume')).toMatchObject({ cause: 'breaker-open' });
    expect(calls).toBe(2);
  });
});

describe('LocalFallback', () => {
  const local = entryOf({ name: 'l', burst: 2, rate: '1/m', failMode: 'local' });
  const open = entryOf({ name: 'o', limit: 5, window: '1m', failMode: 'open' });
  const closed = entryOf({ name: 'c', limit: 5, window: '1m', failMode: 'closed' });
  const down = new StoreCall(storeDown('down'), 10);
  /** The store call's answer, and the fallback's verdicts riding on it (as `check` takes the two steps). */
  const askWithFallback = async (
    fallback: LocalFallback,
    entries: readonly StoreEntry[],
    mode: StoreMode,
  ): Promise<StoreAnswer> => {
    const answer = await ask(down, entries, mode);
    return answer instanceof StoreUnavailable ? fallback.decide(entries, mode, answer) : answer;
  };

  it('adds verdicts for the local entries only; the fail modes read them', async () => {
    const layer = new LocalFallback(() => T0, 100);
    const entries = [open, local];
    const answer = (await askWithFallback(layer, entries, 'consume')) as StoreUnavailable;
    expect(answer).toBeInstanceOf(StoreUnavailable);
    expect(answer.localVerdicts?.[0]).toBeUndefined();
    expect(answer.localVerdicts?.[1]).toMatchObject({ allowed: true, remaining: 1 });
    const { results, source } = applyFailModes(entries, answer);
    expect(source).toBe('local');
    expect(results.map((r) => [r.policy, r.allowed, r.outcome])).toEqual([
      ['o', true, 'unavailable'],
      ['l', true, 'allowed'],
    ]);
  });

  it('only peeks under an enforced closed policy: nothing is charged locally', async () => {
    const layer = new LocalFallback(() => T0, 100);
    for (let i = 0; i < 3; i++) await askWithFallback(layer, [closed, local], 'consume');
    const answer = (await askWithFallback(layer, [local], 'consume')) as StoreUnavailable;
    expect(answer.localVerdicts?.[0]).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('the deny cache step in a check', () => {
  it('answers from memory only after the store denied, and skips the lookup for an idempotent call', async () => {
    let calls = 0;
    const memory = new MemoryStore({ clock: () => T0 });
    const counting = storeOf((entries, mode, options) => {
      calls++;
      return memory.decide(entries, mode, options);
    });
    const limiter = createLimiter({
      policies: [{ name: 'b', burst: 1, rate: '1/m' }],
      store: counting,
      clock: () => T0,
      denyCache: { maxKeys: 10, maxAgeMs: 1000 },
    });
    const sources: string[] = [];
    for (let i = 0; i < 3; i++) sources.push((await limiter.check({ identity: 'a' })).source);
    expect(sources).toEqual(['store', 'store', 'deny-cache']);
    expect(calls).toBe(2);
    expect((await limiter.check({ identity: 'a', requestId: '1' })).source).toBe('store');
    expect((await limiter.peek({ identity: 'a' })).source).toBe('store');
    expect(calls).toBe(4);
    await limiter.reset('a');
    expect((await limiter.check({ identity: 'a' })).source).toBe('store');
  });
});
