/** `createLimiter`: the policies, and the steps of a check made for them; the calls are in pipeline.ts. */

import { monotonicNow } from '../monotonic.js';
import { definePolicies } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import { MemoryStore } from '../stores/memory-store.js';
import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  Descriptor,
  IdentityInput,
  PolicyInput,
  SlotLostEvent,
  Store,
} from '../types.js';
import { LimiterCounters, type ScriptStats } from './counters.js';
import type { Limiter, SettleUnits } from './limiter.js';
import { type SettleAnswer } from './store-answer.js';
import { type BreakerState, CircuitBreaker, StoreCall } from './store-call.js';

export type { Limiter } from './limiter.js';

import { LocalFallback } from './local-fallback.js';
import { type LimiterOptions, resolveLimiterOptions } from './options.js';
import { check, checkEntries, type LimiterParts, peek, reset } from './pipeline.js';
import { type ExplicitEntry, type OverloadPlanner, policyNamed, usesOverload } from './plan.js';
import { Reservations } from './settle.js';
import { HeldSlots } from './slots.js';
import { composeSteps } from './steps.js';
import { Turns } from './turns.js';

/**
 * Builds a limiter. Policies are validated here (a bad one throws `PolicyError`), options too
 * (a bad one throws `TypeError` naming it); nothing fails later on the request path.
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const resolved = resolveLimiterOptions(options);
  const policies = definePolicies(options.policies);
  const store: Store = options.store ?? new MemoryStore({ clock: resolved.clock });
  const breaker =
    resolved.breaker === undefined
      ? undefined
      : new CircuitBreaker(resolved.breaker.failureThreshold, resolved.breaker.cooldownMs, resolved.clock);
  const counters = new LimiterCounters(
    resolved.timeoutMs / 1000,
    () => (store as { scriptStats?: ScriptStats }).scriptStats,
  );
  const storeCall = new StoreCall(store, resolved.timeoutMs, breaker, counters.store);
  let steps = composeSteps(storeCall, policies, resolved, counters);
  const listeners = new Set<(event: DecisionEvent) => void>();
  if (options.onDecision) listeners.add(options.onDecision);
  // One for the limiter's life: a decision made before `updatePolicies` can still be settled.
  const reservations = new Reservations(resolved.clock, () => steps);
  const lostListeners = new Set<(event: SlotLostEvent) => void>();
  // Turns and slot renewals are timed on the monotonic clock: a wall clock set back must not stop them.
  const slots = new HeldSlots(monotonicNow, () => steps, counters.overload, lostListeners);
  const turns = new Turns(resolved.maxWaiting, counters.overload, monotonicNow);
  const planner: OverloadPlanner = {
    nextSlotId: () => slots.nextSlotId(),
    get waitsOpen() {
      return turns.open;
    },
    planWait: () => turns.plan(),
  };
  const entriesFallback = new LocalFallback(resolved.clock, resolved.localFallbackMaxKeys);
  const partsOf = (set: readonly CompiledPolicy[]): LimiterParts => ({
    policies: set,
    byName: new Map(set.map((p) => [p.name, p] as const)),
    prefix: resolved.prefix,
    steps,
    idempotencyTtlMs: resolved.idempotencyTtlMs,
    listeners,
    reservations,
    storeKind: store.kind,
    overload: usesOverload(set),
    slots,
    turns,
    planner,
    entriesFallback,
  });
  // Replaced whole by updatePolicies (steps too): a check reads it once, so it runs under one set.
  let parts = partsOf(policies);

  return {
    get policies(): readonly CompiledPolicy[] {
      return parts.policies;
    },
    prefix: resolved.prefix,
    get breakerState(): BreakerState {
      return breaker?.state ?? 'closed';
    },
    get liveEvictions(): number {
      const fromStore = (store as { liveEvictions?: unknown }).liveEvictions;
      const inProcess = (steps.fallback?.liveEvictions ?? 0) + entriesFallback.liveEvictions;
      return (typeof fromStore === 'number' ? fromStore : 0) + inProcess;
    },
    counters,
    policy: (name: string) => policyNamed(parts, name),
    check: (descriptor: Descriptor): Promise<Decision> => check(parts, descriptor),
    peek: (descriptor: Descriptor): Promise<Decision> => peek(parts, descriptor),
    checkEntries: (
      entries: readonly ExplicitEntry[],
      mode: 'consume' | 'peek' = 'consume',
    ): Promise<Decision> => checkEntries(parts, entries, mode),
    reset: (identity: IdentityInput, policy?: string, route?: string): Promise<void> =>
      reset(parts, identity, policy, route),
    updatePolicies(inputs: readonly PolicyInput[]): void {
      const next = definePolicies(inputs);
      // The deny cache is made anew: a denial remembered under the old limits must not
      // outlive them. The breaker and the local fallback's in-process state carry on.
      steps = composeSteps(storeCall, next, resolved, counters, steps);
      parts = partsOf(next);
    },
    settle: (decision: Decision, units: SettleUnits): Promise<SettleAnswer> =>
      reservations.settle(decision, units),
    release: (decision: Decision): Promise<void> => slots.release(decision),
    hasSlots: (decision: Decision): boolean => slots.holds(decision),
    onSlotLost: (listener: (event: SlotLostEvent) => void): (() => void) =>
      subscribe(lostListeners, listener, 'limiter.onSlotLost'),
    async close(): Promise<void> {
      turns.cancelAll();
      await slots.releaseAll();
    },
    onDecision: (listener: (event: DecisionEvent) => void): (() => void) =>
      subscribe(listeners, listener, 'limiter.onDecision'),
  };
}

/** Adds `listener` to `listeners` (a TypeError naming `method` for a non-function); returns its unsubscribe. */
function subscribe<E>(
  listeners: Set<(event: E) => void>,
  listener: (event: E) => void,
  method: string,
): () => void {
  if (typeof listener !== 'function') {
    throw new TypeError(`${method}: the listener must be a function, got ${describeValue(listener)}`);
  }
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}
