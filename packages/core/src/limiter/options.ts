/** `createLimiter` options: the shape, the defaults and their validation. */

import { checkOptionNames, LIMITER_OPTION_NAMES } from '../http/option-names.js';
import { RateLimitOptionsError } from '../http/options-error.js';
import { storeProblem } from '../http/store-check.js';
import { isValidPrefix } from '../keys/build-keys.js';
import type { Clock, DecisionEvent, PolicyInput, Store } from '../types.js';

/** Options of `createLimiter`. */
export interface LimiterOptions {
  /** The policies this limiter can apply; names must be unique. */
  policies: readonly PolicyInput[];
  /** Where state lives. Default: a new `MemoryStore` (one process only). */
  store?: Store;
  /** Key prefix. Default `'sluice'`. No whitespace, `{` or `}`. */
  prefix?: string;
  /** Deadline for every store call, in milliseconds. Default 100. A missed deadline is `unavailable`. */
  timeoutMs?: number;
  /** Stop calling a failing store for a cool-down. Defaults: 5 consecutive failures, 1000 ms. */
  breaker?: { failureThreshold?: number; cooldownMs?: number } | false;
  /**
   * Remember store denials in-process until they expire. Default on: 10 000 key sets, each
   * remembered for at most `maxAgeMs` (default 1000), which bounds how long a `reset` made on
   * another instance can go unseen here.
   */
  denyCache?: { maxKeys?: number; maxAgeMs?: number } | false;
  /** The in-process limiter that decides `failMode: 'local'` policies while the store is unavailable. */
  localFallback?: { maxKeys?: number };
  /**
   * Idempotent checks (`descriptor.requestId`): how long a decision is remembered, in ms
   * (default 60 000). A retry after that is a new request.
   */
  idempotency?: { ttlMs?: number };
  /** Milliseconds since the epoch; `Date.now` by default. Injected in tests. */
  clock?: Clock;
  /** Called once per decision (never for `peek`). Carries no identity, key or route. */
  onDecision?: (event: DecisionEvent) => void;
}

/** Every `createLimiter` default, in one place. */
export const LIMITER_DEFAULTS = Object.freeze({
  prefix: 'sluice',
  timeoutMs: 100,
  failureThreshold: 5,
  cooldownMs: 1000,
  denyCacheMaxKeys: 10_000,
  denyCacheMaxAgeMs: 1000,
  localFallbackMaxKeys: 100_000,
  idempotencyTtlMs: 60_000,
});

/** Validated options with defaults applied. */
export interface ResolvedLimiterOptions {
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly breaker: { readonly failureThreshold: number; readonly cooldownMs: number } | undefined;
  readonly denyCacheMaxKeys: number | undefined;
  readonly denyCacheMaxAgeMs: number;
  readonly localFallbackMaxKeys: number;
  readonly idempotencyTtlMs: number;
  readonly clock: Clock;
}

function fail(field: string, value: unknown, requirement: string): never {
  throw new RateLimitOptionsError(field, value, requirement, 'createLimiter');
}

function positiveNumber(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail(field, value, 'must be a positive, finite number');
  }
  return value;
}

function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    fail(field, value, 'must be a positive integer');
  }
  return value;
}

function optionalObject(field: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    fail(field, value, 'must be an object');
  return value as Record<string, unknown>;
}

/**
 * Validates everything except the policies (which throw `PolicyError`).
 * @throws RateLimitOptionsError (a TypeError) naming the option and the value
 */
export function resolveLimiterOptions(options: LimiterOptions): ResolvedLimiterOptions {
  if (typeof options !== 'object' || options === null) fail('options', options, 'must be an object');
  checkOptionNames(
    options as unknown as Record<string, unknown>,
    LIMITER_OPTION_NAMES,
    'createLimiter()',
    'createLimiter',
  );
  const prefix = options.prefix ?? LIMITER_DEFAULTS.prefix;
  if (!isValidPrefix(prefix)) {
    fail('prefix', options.prefix, 'must be 1-128 characters without whitespace, "{" or "}"');
  }
  const storeIssue = options.store === undefined ? undefined : storeProblem(options.store);
  if (storeIssue !== undefined) fail('store', options.store, storeIssue);
  if (options.clock !== undefined && typeof options.clock !== 'function') {
    fail('clock', options.clock, 'must be a function returning milliseconds');
  }
  if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
    fail('onDecision', options.onDecision, 'must be a function');
  }
  const timeoutMs = positiveNumber('timeoutMs', options.timeoutMs, LIMITER_DEFAULTS.timeoutMs);

  let breaker: ResolvedLimiterOptions['breaker'];
  if (options.breaker !== false) {
    const b = optionalObject('breaker', options.breaker);
    breaker = {
      failureThreshold: positiveInteger(
        'breaker.failureThreshold',
        b.failureThreshold,
        LIMITER_DEFAULTS.failureThreshold,
      ),
      cooldownMs: positiveNumber('breaker.cooldownMs', b.cooldownMs, LIMITER_DEFAULTS.cooldownMs),
    };
  }
  let denyCacheMaxKeys: number | undefined;
  let denyCacheMaxAgeMs: number = LIMITER_DEFAULTS.denyCacheMaxAgeMs;
  if (options.denyCache !== false) {
    const d = optionalObject('denyCache', options.denyCache);
    denyCacheMaxKeys = positiveInteger('denyCache.maxKeys', d.maxKeys, LIMITER_DEFAULTS.denyCacheMaxKeys);
    denyCacheMaxAgeMs = positiveNumber('denyCache.maxAgeMs', d.maxAgeMs, LIMITER_DEFAULTS.denyCacheMaxAgeMs);
  }
  const l = optionalObject('localFallback', options.localFallback);
  const localFallbackMaxKeys = positiveInteger(
    'localFallback.maxKeys',
    l.maxKeys,
    LIMITER_DEFAULTS.localFallbackMaxKeys,
  );
  const i = optionalObject('idempotency', options.idempotency);
  const idempotencyTtlMs = positiveInteger('idempotency.ttlMs', i.ttlMs, LIMITER_DEFAULTS.idempotencyTtlMs);
  return {
    prefix,
    timeoutMs,
    breaker,
    denyCacheMaxKeys,
    denyCacheMaxAgeMs,
    localFallbackMaxKeys,
    idempotencyTtlMs,
    clock: options.clock ?? (() => Date.now()),
  };
}
