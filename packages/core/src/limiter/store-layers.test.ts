/**
 * The store layers on their own: the shape of "the store could not decide" (StoreUnavailable and
 * its cause), the breaker counting it, the local fallback's verdicts riding on it, and the deny
 * cache answering from memory only what the store denied.
 */
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { PolicyInput, Store, StoreCheckOptions, StoreEntry, StoreMode } from '../types.js';
import { CircuitBreaker } from './breaker.js';
import { DenyCache } from './deny-cache.js';
import { applyFailModes } from './fail-modes.js';
import { type StoreAnswer, type StoreLayer, StoreUnavailable } from './store-answer.js';
import { storeDown } from './test-stores.test-support.js';
import { withBreaker } from './with-breaker.js';
import { withDeadline } from './with-deadline.js';
import { withDenyCache } from './with-deny-cache.js';
import { withLocalFallback } from './with-local-fallback.js';

const T0 = 1_700_000_000_000;
const entryOf = (input: PolicyInput, key = `k:${input.name}`): StoreEntry => ({
  key,
  policy: definePolicy(input),
  cost: 1,
});
/** The layer's answer itself (the handler a layer hands outward, as the pipeline's would be). */
const ask = (
  layer: StoreLayer,
  entries: readonly StoreEntry[],
  mode: StoreMode,
  options?: StoreCheckOptions,
): StoreAnswer | Promise<StoreAnswer> =>
  layer.decide(entries, mode, options, (answer: StoreAnswer) => answer);
const bucket = entryOf({ name: 'b', burst: 1, rate: '1/m' });

/** A store whose `decide` does what `answer` says. */
const storeOf = (decide: Store['decide']): Store => ({
  kind: 'test',
  decide,
  reset: () => Promise.resolve(),
});

describe('withDeadline', () => {
  it('names why the store could not decide: error, timeout, wrong verdict count', async () => {
    const cause = async (store: Store): Promise<unknown> => {
      const answer = await ask(withDeadline(store, 10), [bucket], 'consume');
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
    expect(ask(withDeadline(throwing, 10), [bucket], 'consume')).toMatchObject({ cause: 'error' });
  });

  it('asks a store that decides in-process synchronously: the answer is there now', () => {
    const answer = ask(withDeadline(new MemoryStore({ clock: () => T0 }), 10), [bucket], 'consume');
    expect(answer).toMatchObject({ source: 'store', verdicts: [{ allowed: true }] });
  });
});

describe('withBreaker', () => {
  it('counts StoreUnavailable as a failure, and answers breaker-open without calling', async () => {
    let calls = 0;
    const failing = withDeadline(
      storeOf(() => {
        calls++;
        return Promise.reject(new Error('down'));
      }),
      10,
    );
    const layer = withBreaker(failing, new CircuitBreaker(2, 1000, () => T0));
    for (let i = 0; i < 2; i++)
      expect(await ask(layer, [bucket], 'consume')).toMatchObject({ cause: 'error' });
    expect(await ask(layer, [bucket], 'consume')).toMatchObject({ cause: 'breaker-open' });
    expect(calls).toBe(2);
  });
});

describe('withLocalFallback', () => {
  const local = entryOf({ name: 'l', burst: 2, rate: '1/m', failMode: 'local' });
  const open = entryOf({ name: 'o', limit: 5, window: '1m', failMode: 'open' });
  const closed = entryOf({ name: 'c', limit: 5, window: '1m', failMode: 'closed' });
  const down = withDeadline(storeDown('down'), 10);

  it('adds verdicts for the local entries only; the fail modes read them', async () => {
    const layer = withLocalFallback(down, () => T0, 100);
    const entries = [open, local];
    const answer = (await ask(layer, entries, 'consume')) as StoreUnavailable;
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
    const layer = withLocalFallback(down, () => T0, 100);
    for (let i = 0; i < 3; i++) await ask(layer, [closed, local], 'consume');
    const answer = (await ask(layer, [local], 'consume')) as StoreUnavailable;
    expect(answer.localVerdicts?.[0]).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('withDenyCache', () => {
  it('answers from memory only after the store denied, and skips the lookup for an idempotent call', async () => {
    let calls = 0;
    const memory = new MemoryStore({ clock: () => T0 });
    const counting = storeOf((entries, mode, options) => {
      calls++;
      return memory.decide(entries, mode, options);
    });
    const layer = withDenyCache(withDeadline(counting, 50), new DenyCache(10, 1000), () => T0);
    const sources: string[] = [];
    const sourceOf = (a: StoreAnswer) => (a instanceof StoreUnavailable ? a.cause : a.source);
    sources.push(sourceOf(await ask(layer, [bucket], 'consume')));
    sources.push(sourceOf(await ask(layer, [bucket], 'consume')));
    sources.push(sourceOf(await ask(layer, [bucket], 'consume')));
    expect(sources).toEqual(['store', 'store', 'deny-cache']);
    expect(calls).toBe(2);
    const record = { requestKey: 'k:~rid:1', requestTtlMs: 1000 };
    expect(sourceOf(await ask(layer, [bucket], 'consume', record))).toBe('store');
    expect(sourceOf(await ask(layer, [bucket], 'peek'))).toBe('store');
    expect(calls).toBe(4);
    await layer.reset([bucket.key]);
    expect(sourceOf(await ask(layer, [bucket], 'consume'))).toBe('store');
  });
});
