/** The options of `RateLimitModule.forRoot()` / `forRootAsync()`, and the module builder. */
import { ConfigurableModuleBuilder } from '@nestjs/common';
import { type ModuleOptions, OPTION_DEFAULTS, type RouteOptions } from '@sluice/core/adapter';

/**
 * The request object the guard sees: Express's `Request` on the Express platform,
 * Fastify's `FastifyRequest` on the Fastify platform. Both have these members.
 */
export interface RateLimitRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly ip?: string;
  [key: string]: unknown;
}

/** Options of `RateLimitModule.forRoot()` (core's `ModuleOptions`, from its option schema). */
export type RateLimitModuleOptions = ModuleOptions<RateLimitRequest>;

/** Options of `@RateLimit({...})` (core's `RouteOptions`, from its option schema). */
export type RateLimitRouteOptions = RouteOptions<RateLimitRequest>;

export { NEST_MODULE_OPTION_NAMES } from '@sluice/core/adapter';

/** Extra options of `forRoot()` / `forRootAsync()` that shape the module itself. */
export interface RateLimitModuleExtras {
  /** Register the module globally, so `RateLimitGuard` resolves in every module. Default true. */
  isGlobal?: boolean;
}

const built = new ConfigurableModuleBuilder<RateLimitModuleOptions>({ moduleName: 'RateLimit' })
  .setClassMethodName('forRoot')
  .setExtras<RateLimitModuleExtras>({ isGlobal: OPTION_DEFAULTS.isGlobal }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal ?? OPTION_DEFAULTS.isGlobal,
  }))
  .build();

/** The base class `RateLimitModule` extends: provides `forRoot()` and `forRootAsync()`. */
export const ConfigurableRateLimitModule = built.ConfigurableModuleClass;

/** Injection token of the module options: `@Inject(RATE_LIMIT_MODULE_OPTIONS)`. */
export const RATE_LIMIT_MODULE_OPTIONS = built.MODULE_OPTIONS_TOKEN;

/** Type of the argument of `RateLimitModule.forRoot()`. */
export type RateLimitModuleForRootOptions = typeof built.OPTIONS_TYPE;

/** Type of the argument of `RateLimitModule.forRootAsync()`. */
export type RateLimitModuleAsyncOptions = typeof built.ASYNC_OPTIONS_TYPE;
