/** The schema of the options only `createLimiter()` (and the Nest module) take: one entry per option. */
import type { Clock, DecisionEvent } from '../types.js';
import { OPTION_DEFAULTS } from './defaults.js';
import {
  isFunction,
  isObject,
  type OptionFail,
  type OptionSurface,
  option,
  positiveInteger,
  positiveNumber,
  timerMs,
} from './option.js';

const LIMITER: readonly OptionSurface[] = ['createLimiter', 'nestjs-module'];

/** A nested field (`breaker.cooldownMs`): its default when unset, else `check` naming the field. */
function field<T>(
  fail: OptionFail,
  name: string,
  value: unknown,
  check: (value: unknown, fail: OptionFail) => T,
  fallback: T,
): T {
  return value === undefined ? fallback : check(value, (requirement) => fail(requirement, name, value));
}

/** The breaker as resolved: `false` when turned off. */
export type BreakerSettings = { readonly failureThreshold: number; readonly cooldownMs: number } | false;
/** The deny cache as resolved: `false` when turned off. */
export type DenyCacheSettings = { readonly maxKeys: number; readonly maxAgeMs: number } | false;

/** `createLimiter()`'s own options (`policies`, `store` and `prefix` are in `HTTP_OPTIONS`). */
export const LIMITER_OPTIONS = Object.freeze({
  /** Deadline for every store call, in milliseconds. Default 100. A missed deadline is `unavailable`. */
  timeoutMs: option<number>({
    default: OPTION_DEFAULTS.timeoutMs,
    defaultDoc: `\`${OPTION_DEFAULTS.timeoutMs}\``,
    doc: 'Deadline of every store call; a miss is `unavailable`, never `over_limit`.',
    surfaces: LIMITER,
    check: timerMs,
  }),
  /** Stop calling a failing store for a cool-down. Defaults: 5 consecutive failures, 1000 ms. */
  breaker: option<{ failureThreshold?: number; cooldownMs?: number } | false>({
    default: { failureThreshold: OPTION_DEFAULTS.failureThreshold, cooldownMs: OPTION_DEFAULTS.cooldownMs },
    defaultDoc: `\`{ failureThreshold: ${OPTION_DEFAULTS.failureThreshold}, cooldownMs: ${OPTION_DEFAULTS.cooldownMs} }\``,
    doc: 'Stop calling a failing store for a cool-down; `false` turns it off.',
    surfaces: LIMITER,
    check: (value, fail): BreakerSettings => {
      if (value === false) return false;
      const b = isObject(value, fail);
      return {
        failureThreshold: field(
          fail,
          'breaker.failureThreshold',
          b.failureThreshold,
          positiveInteger,
          OPTION_DEFAULTS.failureThreshold,
        ),
        cooldownMs: field(
          fail,
          'breaker.cooldownMs',
          b.cooldownMs,
          positiveNumber,
          OPTION_DEFAULTS.cooldownMs,
        ),
      };
    },
  }),
  /**
   * Remember store denials in-process until they expire. Default on: what the store said of up to
   * `maxKeys` keys (10 000; a check of two policies holds two), each remembered for at most
   * `maxAgeMs` (default 1000), which bounds how long a `reset` made on another instance can go
   * unseen here. The deny cache, leased policies' denied takes and the store waits a local stage
   * tells are one memory per limiter: `maxAgeMs` bounds all of them (with `false`, the leases and
   * the local stage keep the default), and it holds the most keys any of them needs (`maxKeys`,
   * and 100 000 when a policy has a lease or a local stage).
   */
  denyCache: option<{ maxKeys?: number; maxAgeMs?: number } | false>({
    default: { maxKeys: OPTION_DEFAULTS.denyCacheMaxKeys, maxAgeMs: OPTION_DEFAULTS.denyCacheMaxAgeMs },
    defaultDoc: `\`{ maxKeys: ${OPTION_DEFAULTS.denyCacheMaxKeys}, maxAgeMs: ${OPTION_DEFAULTS.denyCacheMaxAgeMs} }\``,
    doc: 'Answer known denials in-process until they expire; `false` turns it off.',
    surfaces: LIMITER,
    check: (value, fail): DenyCacheSettings => {
      if (value === false) return false;
      const d = isObject(value, fail);
      return {
        maxKeys: field(
          fail,
          'denyCache.maxKeys',
          d.maxKeys,
          positiveInteger,
          OPTION_DEFAULTS.denyCacheMaxKeys,
        ),
        maxAgeMs: field(
          fail,
          'denyCache.maxAgeMs',
          d.maxAgeMs,
          positiveNumber,
          OPTION_DEFAULTS.denyCacheMaxAgeMs,
        ),
      };
    },
  }),
  /** The in-process limiter that decides `failMode: 'local'` policies while the store is unavailable. */
  localFallback: option<{ maxKeys?: number }>({
    default: { maxKeys: OPTION_DEFAULTS.localFallbackMaxKeys },
    defaultDoc: `\`{ maxKeys: ${OPTION_DEFAULTS.localFallbackMaxKeys} }\``,
    doc: "Size of the in-process limiter behind `failMode: 'local'`.",
    surfaces: LIMITER,
    check: (value, fail) => ({
      maxKeys: field(
        fail,
        'localFallback.maxKeys',
        isObject(value, fail).maxKeys,
        positiveInteger,
        OPTION_DEFAULTS.localFallbackMaxKeys,
      ),
    }),
  }),
  /**
   * Idempotent checks (`descriptor.requestId`): how long a decision is remembered, in ms
   * (default 60 000). A retry after that is a new request.
   */
  idempotency: option<{ ttlMs?: number }>({
    default: { ttlMs: OPTION_DEFAULTS.idempotencyTtlMs },
    defaultDoc: `\`{ ttlMs: ${OPTION_DEFAULTS.idempotencyTtlMs} }\``,
    doc: "How long a `requestId`'s decision is kept.",
    surfaces: LIMITER,
    check: (value, fail) => ({
      ttlMs: field(
        fail,
        'idempotency.ttlMs',
        isObject(value, fail).ttlMs,
        positiveInteger,
        OPTION_DEFAULTS.idempotencyTtlMs,
      ),
    }),
  }),
  /**
   * Most checks of this limiter waiting for their turn at once (policies with `maxWaitMs`, or a
   * descriptor's). Past it a check is answered at once (429 with the real wait), so a burst never
   * queues more than this many requests in one process. Default 1000.
   */
  maxWaiting: option<number>({
    default: OPTION_DEFAULTS.maxWaiting,
    defaultDoc: `\`${OPTION_DEFAULTS.maxWaiting}\``,
    doc: 'Most checks waiting for their turn at once in this process.',
    surfaces: LIMITER,
    check: positiveInteger,
  }),
  /**
   * Milliseconds since the epoch; `Date.now` by default. Injected in tests. Turns and slot renewals
   * are timed on the monotonic clock (`performance.now`), not on this one.
   */
  clock: option<Clock>({
    default: () => Date.now(),
    defaultDoc: '`Date.now`',
    doc: 'Milliseconds since the epoch, for tests.',
    surfaces: LIMITER,
    check: (value, fail) =>
      typeof value === 'function' ? value : fail('must be a function returning milliseconds'),
  }),
  /** Called once per decision (never for `peek`). Carries no identity, key or route. */
  onDecision: option<(event: DecisionEvent) => void>({
    default: undefined,
    defaultDoc: '-',
    doc: 'Called once per decision; never with the identity, key or route.',
    surfaces: LIMITER,
    check: isFunction,
  }),
});
