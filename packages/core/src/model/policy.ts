/** Policies: as the application writes them, and compiled into the units the algorithms use. */

import type { Algorithm } from '../algorithms/registry.js';
import type { BanInput, CompiledBan } from '../policy/ban.js';
import type { CompiledLease, CompiledLocalStage, LeaseInput, LocalStageInput } from '../policy/lease.js';
import type { Descriptor } from './descriptor.js';
import type { FailMode } from './fail-mode.js';
import type { CompiledQuota, QuotaInput } from './quota.js';

/** A rate such as `'100/s'`, `'5/10s'` or `{ limit: 100, windowMs: 1000 }`. */
export type RateInput = string | { readonly limit: number; readonly window: string | number };

/** Units charged for one request: a number, or a function of the descriptor. */
export type CostInput = number | ((descriptor: Descriptor) => number);

/**
 * A policy as the application writes it. Validated by `definePolicy` / `createLimiter`;
 * a bad field throws a `PolicyError` naming the field and the value.
 */
export interface PolicyInput {
  /** Unique name; appears in headers, metrics and problem bodies. */
  readonly name: string;
  /** Defaults to `'token-bucket'`. */
  readonly algorithm?: Algorithm;
  /** Units admitted per `window` (window algorithms), or per `window` of refill (token bucket, GCRA). */
  readonly limit?: number;
  /** `'1m'`, `'10s'`, `'500ms'`, `'1h'` or milliseconds. */
  readonly window?: string | number;
  /** Alternative to `limit` + `window`: `'100/s'`, `'5/10s'`. */
  readonly rate?: RateInput;
  /** Bucket capacity for token bucket and GCRA. Defaults to `limit`. */
  readonly burst?: number;
  /** Default cost per request; 1 when unset. */
  readonly cost?: CostInput;
  /** Defaults to `'closed'`. */
  readonly failMode?: FailMode;
  /** Decide and record, never enforce. */
  readonly shadow?: boolean;
  /** `'identity'` (default): one counter per identity. `'route'`: one per identity and route. */
  readonly scope?: 'identity' | 'route';
  /**
   * Ban after a denial: once this policy denies a request, that identity is denied by this
   * policy for `blockMs`, on every instance (the ban lives in the store next to the policy's
   * state). Unset: no ban.
   */
  readonly ban?: BanInput;
  /**
   * Lease units to each instance: `{ units: 10, ttlMs: '1s' }` takes 10 units from the store in
   * one call and admits from them in-process (decision source `lease`); never more admitted
   * than the policy allows, at most instances x units unused. Unset: one store call per check.
   */
  readonly lease?: LeaseInput;
  /**
   * An in-process bucket per key in front of the store, `{ burst: 20, rate: '10/s' }`: a request
   * it turns away never reaches the store (decision source `local-stage`). Unset: none.
   */
  readonly local?: LocalStageInput;
  /**
   * Regional quota: `{ service, bucket }` admits from the share of a global budget that `service`
   * (e.g. `QuotaClient` of `@sluice/server`) holds for `bucket`, in-process (decision source
   * `quota`), no store call per request; with no live assignment, `failMode` decides. Unset: none.
   */
  readonly quota?: QuotaInput;
  /**
   * A concurrency policy (`algorithm: 'concurrency'`): how long a slot lives without renewal
   * (`'10s'` or ms); the slots of an instance that died come back after it. Default 30 s.
   */
  readonly leaseMs?: string | number;
  /**
   * Waiting (token bucket, GCRA): a request over the limit whose turn comes within this many ms
   * (`'1s'` or ms) reserves that turn and waits for it instead of being denied. Unset: no waiting.
   */
  readonly maxWaitMs?: string | number;
}

/** A validated policy in the units the algorithms use. Built once, at construction. */
export interface CompiledPolicy {
  readonly name: string;
  readonly algorithm: Algorithm;
  /**
   * The quota: units admitted per window (window algorithms) or the bucket capacity
   * (token bucket, GCRA). This is `q` in `RateLimit-Policy`.
   */
  readonly limit: number;
  /**
   * Window length (window algorithms), or the time to refill from empty to full
   * (token bucket, GCRA: `limit * intervalMs`). This is `w` in `RateLimit-Policy`.
   */
  readonly windowMs: number;
  /** Milliseconds to earn back one unit (token bucket, GCRA); `windowMs / limit` otherwise. */
  readonly intervalMs: number;
  readonly cost: CostInput;
  readonly failMode: FailMode;
  readonly shadow: boolean;
  readonly scope: 'identity' | 'route';
  /** The ban after a denial; absent for a policy without one. */
  readonly ban?: CompiledBan;
  /** The lease; absent for a policy without one. */
  readonly lease?: CompiledLease;
  /** The local stage; absent for a policy without one. */
  readonly local?: CompiledLocalStage;
  /** The regional quota; absent for a policy without one. */
  readonly quota?: CompiledQuota;
  /** Waiting: the longest a request may wait for its turn, in ms (> 0); absent for a policy that does not wait. */
  readonly maxWaitMs?: number;
}
