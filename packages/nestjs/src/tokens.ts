/** Injection tokens of the rate-limit module. */

/** The `Limiter` built from the module options (or the one passed in): `@Inject(RATE_LIMITER)`. */
export const RATE_LIMITER = Symbol.for('@sluice/nestjs:limiter');

/** The `Store` the module's limiters use: `@Inject(RATE_LIMIT_STORE)`. */
export const RATE_LIMIT_STORE = Symbol.for('@sluice/nestjs:store');

/** Reflect-metadata key of `@RateLimit()`. */
export const RATE_LIMIT_METADATA = 'sluice:rate-limit';

/** Reflect-metadata key of `@SkipRateLimit()`. */
export const SKIP_RATE_LIMIT_METADATA = 'sluice:skip-rate-limit';
