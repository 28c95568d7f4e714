/**
 * The example-app contract's policy table (design.md, "The example-app contract").
 * Every example app (express, koa, nest, hono, fastify) declares exactly these policies and routes,
 * so the same tests drive all of them and several apps can share one Redis.
 */
import type { PolicyInput } from '@sluice/core';

/** Every policy the app uses, decided by one shared limiter. */
export const POLICIES: readonly PolicyInput[] = [
  { name: 'burst', algorithm: 'token-bucket', rate: '1/s', burst: 20 },
  { name: 'payments', algorithm: 'token-bucket', rate: '2/s', burst: 20 },
  { name: 'transfers', algorithm: 'sliding-window', limit: 3, window: '60s' },
  { name: 'shadow-probe', algorithm: 'fixed-window', limit: 5, window: '60s', shadow: true },
  { name: 'strict', algorithm: 'token-bucket', rate: '1000/s', burst: 1000, failMode: 'closed' },
  { name: 'lenient', algorithm: 'token-bucket', rate: '1000/s', burst: 1000, failMode: 'open' },
  { name: 'tier-pro', algorithm: 'fixed-window', limit: 10, window: '60s' },
  { name: 'tier-free', algorithm: 'fixed-window', limit: 3, window: '60s' },
  { name: 'llm-tokens', algorithm: 'token-bucket', rate: '10/s', burst: 1000 },
  { name: 'login', algorithm: 'fixed-window', limit: 5, window: '60s' },
  // Each instance takes 10 units of the Redis budget at a time and admits from them in-process for up to 1 s.
  { name: 'leased', algorithm: 'token-bucket', rate: '10/s', burst: 100, lease: { units: 10, ttlMs: 1000 } },
  // At most 3 requests of one identity in flight across every instance; a dead instance's slots come back after 10 s.
  { name: 'in-flight', algorithm: 'concurrency', limit: 3, leaseMs: '10s' },
  // A request over the rate waits for its turn, up to 1 s, instead of a 429.
  { name: 'queued', algorithm: 'token-bucket', burst: 5, rate: '10/s', maxWaitMs: 1000 },
];

/** The API key prefix of the pro plan: a stand-in for a plan looked up from the tenant. */
export const PRO_KEY_PREFIX = 'pro-';

/**
 * GET /tiered: the policies of the caller's plan, chosen per request from its `x-api-key`
 * header: `tier-pro` for keys starting with `pro-`, else (another key, or none) `tier-free`.
 */
export function tieredPolicies(apiKey: string | readonly string[] | undefined): readonly string[] {
  return typeof apiKey === 'string' && apiKey.startsWith(PRO_KEY_PREFIX) ? PRO_TIER : FREE_TIER;
}

const PRO_TIER: readonly string[] = Object.freeze(['tier-pro']);
const FREE_TIER: readonly string[] = Object.freeze(['tier-free']);

/** Which policies each limited route uses, and what it costs per policy. */
export const ROUTE_LIMITS = {
  /** GET /limited */
  limited: { policies: ['burst'] },
  /** POST /transfers/:id: both policies in one call, all or nothing. */
  transfer: { policies: ['payments', 'transfers'], cost: { payments: 5, transfers: 1 } },
  /** GET /transfers/:id/status: shares the tenant's payments bucket. */
  transferStatus: { policies: ['payments'], cost: { payments: 1 } },
  /** GET /shadow: decided and counted, never enforced. */
  shadow: { policies: ['shadow-probe'] },
  /** GET /strict: 503 when the store is unreachable. */
  strict: { policies: ['strict'] },
  /** GET /lenient: admitted when the store is unreachable. */
  lenient: { policies: ['lenient'] },
  /** POST /generate?used=N: reserves 100 units, settled to N once the response ended (see settle.ts). */
  generate: { policies: ['llm-tokens'], cost: { 'llm-tokens': 100 } },
  /** POST /login?ok=1|0: counts only failed logins (`skipSuccessfulRequests`). */
  login: { policies: ['login'] },
  /** GET /leased: admitted from a lease of 10 units per instance where one is live (decision source `lease`). */
  leased: { policies: ['leased'] },
  /** GET /concurrent?ms=N: holds one of the identity's 3 slots until the response ends. */
  concurrent: { policies: ['in-flight'] },
  /** GET /queued: over the rate, waits for its turn up to 1 s. */
  queued: { policies: ['queued'] },
} as const satisfies Record<string, { policies: readonly string[]; cost?: Readonly<Record<string, number>> }>;
