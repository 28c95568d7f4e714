/**
 * The shared vocabulary of Sluice, by topic: policies (model/policy.ts, model/fail-mode.ts),
 * descriptors and identities (model/descriptor.ts), decisions (model/decision.ts) and the store
 * contract (model/store.ts). Plain data and interfaces; no runtime code, no `node:` imports.
 * Modules reached from model/ import the file they need, never this one (no import cycles).
 */

/** The algorithm a policy uses to decide: a name in the algorithm registry (algorithms/registry.ts). */
export type { Algorithm } from './algorithms/registry.js';
export type {
  Decision,
  DecisionEvent,
  DecisionSource,
  MetricOutcome,
  Outcome,
  PolicyResult,
  SlotLostEvent,
} from './model/decision.js';
export type { Descriptor, Identity, IdentityInput, IdentityKind } from './model/descriptor.js';
export type { FailMode } from './model/fail-mode.js';
export type { CompiledPolicy, CostInput, PolicyInput, RateInput } from './model/policy.js';
export type { CompiledQuota, QuotaInput, QuotaSource, QuotaSourceBucket, QuotaTake } from './model/quota.js';
export type {
  EvalClient,
  SlotRef,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreSettleEntry,
  StoreVerdict,
} from './model/store.js';
export type { BanInput, CompiledBan } from './policy/ban.js';
export type { CompiledLease, CompiledLocalStage, LeaseInput, LocalStageInput } from './policy/lease.js';

/** Milliseconds since the epoch. Injected in tests; `Date.now` otherwise. */
export type Clock = () => number;
