/** `createLimiter` options: validated against the option schema, defaults applied. */

import {
  type BreakerSettings,
  checkOption,
  type DenyCacheSettings,
  HTTP_OPTIONS,
  LIMITER_OPTION_NAMES,
  LIMITER_OPTIONS,
  type LimiterOptions,
  OPTION_DEFAULTS,
  type OptionSpec,
} from '../options/index.js';
import { checkOptionNames } from '../options/option-names.js';
import { RateLimitOptionsError } from '../options/options-error.js';
import type { Clock } from '../types.js';

export type { LimiterOptions } from '../options/index.js';

/** Every `createLimiter` default (from `OPTION_DEFAULTS`, where they live). */
export const LIMITER_DEFAULTS = Object.freeze({
  prefix: OPTION_DEFAULTS.prefix,
  timeoutMs: OPTION_DEFAULTS.timeoutMs,
  failureThreshold: OPTION_DEFAULTS.failureThreshold,
  cooldownMs: OPTION_DEFAULTS.cooldownMs,
  denyCacheMaxKeys: OPTION_DEFAULTS.denyCacheMaxKeys,
  denyCacheMaxAgeMs: OPTION_DEFAULTS.denyCacheMaxAgeMs,
  localFallbackMaxKeys: OPTION_DEFAULTS.localFallbackMaxKeys,
  idempotencyTtlMs: OPTION_DEFAULTS.idempotencyTtlMs,
  maxWaiting: OPTION_DEFAULTS.maxWaiting,
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
  /** Most checks waiting for their turn at once. */
  readonly maxWaiting: number;
  readonly clock: Clock;
}

const error = (option: string, value: unknown, requirement: string) =>
  new RateLimitOptionsError(option, value, requirement, 'createLimiter');

/**
 * Validates everything except the policies (which throw `PolicyError`).
 * @throws RateLimitOptionsError (a TypeError) naming the option and the value
 */
export function resolveLimiterOptions(options: LimiterOptions): ResolvedLimiterOptions {
  if (typeof options !== 'object' || options === null) throw error('options', options, 'must be an object');
  const o = options as unknown as Record<string, unknown>;
  checkOptionNames(o, LIMITER_OPTION_NAMES, 'createLimiter()', 'createLimiter');
  const checked = (spec: OptionSpec<unknown>, name: string): unknown =>
    checkOption(spec, name, o[name], error);
  const prefix = checked(HTTP_OPTIONS.prefix, 'prefix') as string;
  checked(HTTP_OPTIONS.store, 'store');
  const clock = checked(LIMITER_OPTIONS.clock, 'clock') as Clock;
  checked(LIMITER_OPTIONS.onDecision, 'onDecision');
  const timeoutMs = checked(LIMITER_OPTIONS.timeoutMs, 'timeoutMs') as number;
  const breaker = checked(LIMITER_OPTIONS.breaker, 'breaker') as BreakerSettings;
  const denyCache = checked(LIMITER_OPTIONS.denyCache, 'denyCache') as DenyCacheSettings;
  const localFallback = checked(LIMITER_OPTIONS.localFallback, 'localFallback') as { maxKeys: number };
  const idempotency = checked(LIMITER_OPTIONS.idempotency, 'idempotency') as { ttlMs: number };
  const maxWaiting = checked(LIMITER_OPTIONS.maxWaiting, 'maxWaiting') as number;
  return {
    prefix,
    timeoutMs,
    breaker: breaker === false ? undefined : breaker,
    denyCacheMaxKeys: denyCache === false ? undefined : denyCache.maxKeys,
    denyCacheMaxAgeMs: denyCache === false ? OPTION_DEFAULTS.denyCacheMaxAgeMs : denyCache.maxAgeMs,
    localFallbackMaxKeys: localFallback.maxKeys,
    idempotencyTtlMs: idempotency.ttlMs,
    maxWaiting,
    clock,
  };
}
