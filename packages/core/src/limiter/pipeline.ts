/**
 * The limiter's calls, each one function that reads top to bottom: plan the entries, take the
 * steps in order (local stage, deny cache, leases, the store call, the local fallback), the
 * decision (fail modes when the store could not decide), the event.
 */

import { banKeyOf, identityProblem, identityTag, isIdentityInput, policyKey } from '../keys/build-keys.js';
import { monotonicNow } from '../monotonic.js';
import type {
  Decision,
  DecisionEvent,
  Descriptor,
  IdentityInput,
  PolicyResult,
  StoreEntry,
  StoreVerdict,
} from '../types.js';
import {
  applyFailModes,
  buildDecision,
  decisionEvent,
  endCheckSpan,
  resultFromVerdict,
  startCheckSpan,
} from './decision.js';
import type { LocalFallback } from './local-fallback.js';
import {
  type ExplicitEntry,
  type OverloadPlanner,
  type PolicySet,
  planCheck,
  planEntries,
  policyNamed,
  waitSignalOf,
} from './plan.js';
import type { Reservations } from './settle.js';
import type { HeldSlots } from './slots.js';
import type { Steps } from './steps.js';
import { type StoreAnswer, StoreUnavailable } from './store-answer.js';
import { cancelledDecision, type Turns, turnOf } from './turns.js';

/** What the calls need of a built limiter. */
export interface LimiterParts extends PolicySet {
  /** The steps of a check, composed by `createLimiter` for these policies. */
  readonly steps: Steps;
  /** How long an idempotent check's decision is remembered, in ms. */
  readonly idempotencyTtlMs: number;
  /** Called once per decision of `check`. */
  readonly listeners: ReadonlySet<(event: DecisionEvent) => void>;
  /** The reservations of checks made with `reserve: true`, for `limiter.settle`. */
  readonly reservations: Reservations;
  /** The store's `kind`, for traces. */
  readonly storeKind: string;
  /** The concurrency slots the decisions hold. */
  readonly slots: HeldSlots;
  /** The checks waiting for their turn. */
  readonly turns: Turns;
  /** Slot ids and whether another check may wait, for planning. */
  readonly planner: OverloadPlanner;
  /**
   * The local fallback of `checkEntries` (their policies are the caller's, not the limiter's): one
   * for the limiter's life, its in-process store made on first use.
   */
  readonly entriesFallback: LocalFallback;
}

/** The Decision when no policy applies. */
const NO_POLICY: Decision = Object.freeze({
  allowed: true,
  outcome: 'allowed',
  policy: undefined,
  limit: 0,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  shadowed: false,
  source: 'store',
  results: Object.freeze([]) as readonly PolicyResult[],
}) as Decision;

/** The decision for an answer: from the verdicts, or by the fail modes when the store could not decide. */
function decisionOf(entries: readonly StoreEntry[], answer: StoreAnswer): Decision {
  if (answer instanceof StoreUnavailable) {
    const { results, source } = applyFailModes(entries, answer);
    return buildDecision(results, source);
  }
  const { verdicts } = answer;
  const results = answer.results ?? entries.map((e, i) => resultFromVerdict(e.policy, e.cost, verdicts[i]!));
  return buildDecision(results, answer.source);
}

/** Hands the decision's event to every listener; a listener's failure never changes the decision. */
function emit(parts: LimiterParts, decision: Decision, startedAt: number): void {
  if (parts.listeners.size === 0) return;
  const event = decisionEvent(decision, Math.max(0, monotonicNow() - startedAt));
  for (const listener of parts.listeners) {
    try {
      listener(event);
    } catch {
      // A listener's failure must not change the decision.
    }
  }
}

/**
 * `limiter.check`: decides and charges one request, every applying policy in one store call,
 * traced as one span when an OpenTelemetry SDK is registered (`startCheckSpan`, decision.ts). The steps, in order:
 * regional quotas (quota policies are decided there alone, from their shares), the local stage,
 * the deny cache, leases, the store call (breaker and deadline), the local fallback, the decision
 * (by the fail modes when the store could not decide), the event. A step these policies do not use
 * is undefined and skipped; an idempotent check (`requestId`) skips the
 * in-process steps, so its retry gets the recorded answer.
 */
export async function check(parts: LimiterParts, descriptor: Descriptor): Promise<Decision> {
  const startedAt = parts.listeners.size > 0 ? monotonicNow() : 0;
  const { entries, options, waits } = planCheck(
    parts,
    descriptor,
    'check',
    parts.idempotencyTtlMs,
    parts.planner,
  );
  if (entries.length === 0) return NO_POLICY;
  const { clock, quota, localStage, denyCache, leases, store, fallback } = parts.steps;
  // A check that may wait reserves its turn in the store: no in-process step answers for it.
  const inProcess = options === undefined && !waits;
  const askedAtMs = clock();
  const span = startCheckSpan(entries, parts.storeKind);
  let answer: StoreAnswer | undefined;

  // 0. Regional quotas: quota policies are decided from their shares, in-process, and only so.
  if (quota !== undefined) {
    answer = quota.answer(entries);
    if (answer instanceof StoreUnavailable && fallback !== undefined)
      answer = fallback.decide(entries, 'consume', answer);
  }

  // 1. The local stage: a policy's in-process bucket turns a burst away before the store.
  const stage = inProcess && localStage !== undefined ? localStage.charge(entries, askedAtMs) : undefined;
  if (stage?.kind === 'turned-away') answer = await localStage!.turnAway(entries, stage.denied, askedAtMs);

  // 2. The deny cache: a key set the store denied recently is denied again, in-process.
  if (answer === undefined && inProcess) answer = denyCache?.answer(entries, askedAtMs);
  const remembered = answer !== undefined;

  // 3. Leases: leased entries spend units taken before; the store is asked for the rest and for takes.
  // `plannedAtMs`: when the check was last planned, after any wait: the time its answer counts from.
  let plannedAtMs = askedAtMs;
  let leaseStep =
    answer === undefined && inProcess && leases?.applies(entries)
      ? leases.plan(entries, askedAtMs)
      : undefined;
  while (leaseStep?.kind === 'wait') {
    // One take per key at a time: wait for it, then spend from it.
    await leaseStep.refill;
    plannedAtMs = clock();
    leaseStep = leases!.plan(entries, plannedAtMs);
  }
  // An answer from the leases (units in hand, a denied take remembered) is in-process, as one from
  // the deny cache: remembering it again would renew a denial past its maximum age.
  const inLeases = leaseStep?.kind === 'answered';
  if (leaseStep?.kind === 'answered') answer = leaseStep.answer;

  // 4. The store call, under the breaker and the deadline: a failure is StoreUnavailable.
  if (answer === undefined) {
    const call = leaseStep?.kind === 'call' ? leaseStep.call : undefined;
    const sent = call === undefined ? entries : call.sent;
    // A store that decides in-process answers now: no promise, no deadline.
    answer = store.answersNow
      ? store.decideNow(sent, 'consume', options)
      : await store.decide(sent, 'consume', options);
    if (call !== undefined) answer = leases!.afterStore(entries, call, answer, clock());
    // 5. The local fallback: the `local` policies decided in-process while the store cannot.
    if (answer instanceof StoreUnavailable && fallback !== undefined)
      answer = fallback.decide(entries, 'consume', answer);
  }
  // The local stage learns the store's waits; what the store denied is remembered (last: the deny
  // cache keeps a denied check's keys as long as its denial), both from `plannedAtMs`: a check that
  // waited for a take was answered from then, not from its start.
  const below = answer;
  if (stage?.kind === 'charged') answer = localStage!.afterStore(entries, answer, plannedAtMs);
  if (!remembered && !inLeases && !waits && stage?.kind !== 'turned-away')
    denyCache?.remember(entries, below, plannedAtMs);

  // 6. The decision: from the verdicts, or by the fail modes.
  let decision = decisionOf(entries, answer);
  if (span !== undefined) endCheckSpan(span, decision, answer);
  if (descriptor.reserve === true)
    parts.reservations.keep(
      decision,
      entries,
      askedAtMs,
      answer instanceof StoreUnavailable ? undefined : answer.verdicts,
    );

  // 7. Concurrency slots, held until `release`; a check whose plan waits sleeps until its turn.
  if (parts.overload) {
    if (!(answer instanceof StoreUnavailable)) parts.slots.countReclaimed(entries, answer.verdicts);
    parts.slots.keep(decision, entries);
  }
  if (waits) decision = await waitForTurn(parts, decision, entries, answer, descriptor, askedAtMs);

  // 8. The event.
  emit(parts, decision, startedAt);
  return decision;
}

/**
 * The end of a check whose plan waits (`waits`): sleeps until the turn the store reserved (the
 * latest `waitMs` of the verdicts), on the monotonic clock; a denial, a store failure or no wait is
 * the decision as it is. Cancelled first (the descriptor's signal, `limiter.close()`), the check
 * gives back what it holds (`giveBack`) and is denied with the time that was left; a signal function
 * that throws or makes no AbortSignal gives it back too and rejects with a TypeError. However it
 * ends, its place among the `maxWaiting` is freed.
 */
async function waitForTurn(
  parts: LimiterParts,
  decision: Decision,
  entries: readonly StoreEntry[],
  answer: StoreAnswer,
  descriptor: Descriptor,
  askedAtMs: number,
): Promise<Decision> {
  try {
    if (!decision.allowed || answer instanceof StoreUnavailable) return decision;
    const { verdicts } = answer;
    const turnMs = turnOf(verdicts);
    if (turnMs === 0) return decision;
    const answeredAtMs = monotonicNow();
    let signal: AbortSignal | undefined;
    try {
      signal = waitSignalOf(descriptor);
    } catch (error) {
      await giveBack(parts, decision, entries, verdicts, descriptor, askedAtMs);
      throw error;
    }
    if (await parts.turns.sleep(turnMs, signal, entries, verdicts)) return decision;
    await giveBack(parts, decision, entries, verdicts, descriptor, askedAtMs);
    return cancelledDecision(decision, verdicts, monotonicNow() - answeredAtMs);
  } finally {
    parts.turns.end();
  }
}

/** A check that will not wait for its turn after all gives its units back (a settle to 0) and frees its slots. */
async function giveBack(
  parts: LimiterParts,
  decision: Decision,
  entries: readonly StoreEntry[],
  verdicts: readonly StoreVerdict[],
  descriptor: Descriptor,
  askedAtMs: number,
): Promise<void> {
  if (descriptor.reserve !== true) parts.reservations.keep(decision, entries, askedAtMs, verdicts);
  await parts.reservations.settle(decision, 0);
  await parts.slots.release(decision);
}

/**
 * `limiter.peek`: like `check`, but charges nothing and emits no event. It skips the local stage,
 * the deny cache and leases: it reads the store's state as it is.
 */
export async function peek(parts: LimiterParts, descriptor: Descriptor): Promise<Decision> {
  const { entries } = planCheck(parts, descriptor, 'peek', parts.idempotencyTtlMs);
  if (entries.length === 0) return NO_POLICY;
  const { store, fallback } = parts.steps;
  let answer = store.answersNow
    ? store.decideNow(entries, 'peek', undefined)
    : await store.decide(entries, 'peek', undefined);
  if (answer instanceof StoreUnavailable && fallback !== undefined)
    answer = fallback.decide(entries, 'peek', answer);
  return decisionOf(entries, answer);
}

/**
 * `limiter.checkEntries`: decides the caller's entries (keys, compiled policies, costs) in one
 * atomic store call, charged (`consume`: all or nothing) or looked at (`peek`), through the
 * limiter's store call (breaker, deadline, counts), the local fallback and the fail modes, traced
 * as `check` is; a consuming call emits its event. No local stage, deny cache, lease, wait or
 * request record: the entries go to the store as given.
 */
export async function checkEntries(
  parts: LimiterParts,
  given: readonly ExplicitEntry[],
  mode: 'consume' | 'peek',
): Promise<Decision> {
  const startedAt = mode === 'consume' && parts.listeners.size > 0 ? monotonicNow() : 0;
  const entries = planEntries(given, 'checkEntries');
  if (entries.length === 0) return NO_POLICY;
  const { store } = parts.steps;
  const span = startCheckSpan(entries, parts.storeKind);
  let answer = store.answersNow
    ? store.decideNow(entries, mode, undefined)
    : await store.decide(entries, mode, undefined);
  if (answer instanceof StoreUnavailable) answer = parts.entriesFallback.decide(entries, mode, answer);
  const decision = decisionOf(entries, answer);
  if (span !== undefined) endCheckSpan(span, decision, answer);
  if (mode === 'consume') emit(parts, decision, startedAt);
  return decision;
}

/** `limiter.reset`: deletes the state of `identity` for one policy (by name), or all of them. */
export async function reset(
  parts: LimiterParts,
  identity: IdentityInput,
  policyName: string | undefined,
  route: string | undefined,
): Promise<void> {
  if (!isIdentityInput(identity)) {
    throw new TypeError(identityProblem('limiter.reset: "identity"', identity));
  }
  const targets = policyName === undefined ? parts.policies : [policyNamed(parts, policyName)];
  const tag = identityTag(parts.prefix, identity);
  const keys: string[] = [];
  for (const p of targets) {
    const key = policyKey(tag, p, route);
    keys.push(key);
    // A reset lifts the identity's ban too.
    if (p.ban !== undefined) keys.push(banKeyOf(key));
  }
  const { localStage, denials, leases, fallback, store } = parts.steps;
  localStage?.reset(keys);
  denials?.forget(keys);
  leases?.reset(keys);
  await fallback?.reset(keys);
  await store.reset(keys);
}
