/**
 * The limiter's three calls, each a straight line: plan the entries, call the store (through its
 * layers), apply the fail modes when it could not decide, build the decision, emit the event.
 */
import { banKeyOf, identityTag, policyKey } from '../keys/build-keys.js';
import { identityProblem, isIdentityInput } from '../keys/identity.js';
import type {
  Decision,
  DecisionEvent,
  Descriptor,
  IdentityInput,
  PolicyResult,
  StoreEntry,
} from '../types.js';
import { endCheckSpan, startCheckSpan } from './check-span.js';
import { buildDecision, decisionEvent, resultFromVerdict } from './decision.js';
import { applyFailModes } from './fail-modes.js';
import { type PolicySet, planCheck, policyNamed } from './plan.js';
import type { Reservations } from './settle.js';
import { type StoreAnswer, type StoreLayer, StoreUnavailable } from './store-answer.js';

/** What the calls need of a built limiter. */
export interface LimiterParts extends PolicySet {
  /** The store behind every layer, composed once by `createLimiter`. */
  readonly store: StoreLayer;
  /** How long an idempotent check's decision is remembered, in ms. */
  readonly idempotencyTtlMs: number;
  /** Called once per decision of `check`. */
  readonly listeners: ReadonlySet<(event: DecisionEvent) => void>;
  /** The reservations of checks made with `reserve: true`, for `limiter.settle`. */
  readonly reservations: Reservations;
  /** The store's `kind`, for traces. */
  readonly storeKind: string;
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
const NO_POLICY_PROMISE: Promise<Decision> = Promise.resolve(NO_POLICY);

const now = (): number => globalThis.performance?.now() ?? Date.now();

/** The decision for the store layers' answer: from the verdicts, or by the fail modes. */
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
  const event = decisionEvent(decision, Math.max(0, now() - startedAt));
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
 * traced as one span when an OpenTelemetry SDK is registered (check-span.ts).
 * A decision made now (a store that answers in-process) settles one microtask later.
 */
export function check(parts: LimiterParts, descriptor: Descriptor): Promise<Decision> {
  try {
    const startedAt = parts.listeners.size > 0 ? now() : 0;
    const { entries, options } = planCheck(parts, descriptor, 'check', parts.idempotencyTtlMs);
    if (entries.length === 0) return NO_POLICY_PROMISE;
    const reserve = descriptor.reserve === true;
    const askedAtMs = reserve ? parts.reservations.now() : 0;
    const span = startCheckSpan(entries, parts.storeKind);
    const finish = (answer: StoreAnswer): Decision => {
      const decision = decisionOf(entries, answer);
      if (span !== undefined) endCheckSpan(span, decision, answer);
      if (reserve) parts.reservations.keep(decision, entries, askedAtMs);
      emit(parts, decision, startedAt);
      return decision;
    };
    const decision = parts.store.decide(entries, 'consume', options, finish);
    return decision instanceof Promise ? decision : Promise.resolve(decision);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** `limiter.peek`: like `check`, but charges nothing and emits no event. */
export function peek(parts: LimiterParts, descriptor: Descriptor): Promise<Decision> {
  try {
    const { entries } = planCheck(parts, descriptor, 'peek', parts.idempotencyTtlMs);
    if (entries.length === 0) return NO_POLICY_PROMISE;
    return Promise.resolve(
      parts.store.decide(entries, 'peek', undefined, (answer) => decisionOf(entries, answer)),
    );
  } catch (error) {
    return Promise.reject(error);
  }
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
  await parts.store.reset(keys);
}
