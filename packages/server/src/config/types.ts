/** The loaded config: envoyproxy/ratelimit's descriptor tree, each rule compiled to a Sluice policy. */
import type { CompiledPolicy } from '@sluice/core';

/** Envoy's rate limit units (`RateLimitResponse.RateLimit.Unit`), with their lengths in ms. */
export const UNIT_MS = {
  SECOND: 1000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 7 * 86_400_000,
  MONTH: 30 * 86_400_000,
  YEAR: 365 * 86_400_000,
} as const;

/** A unit name Envoy's protos define (UNKNOWN excluded). */
export type Unit = keyof typeof UNIT_MS;

/** One `rate_limit` of the config. */
export interface Rule {
  /** The descriptor path below the domain, as the reference names stats: `foo.bar_bkthomps`. */
  readonly id: string;
  readonly domain: string;
  /** `rate_limit.name`, which `replaces` refers to; empty when unset (as in the protos). */
  readonly name: string;
  readonly replaces: readonly string[];
  readonly unlimited: boolean;
  readonly shadow: boolean;
  readonly requestsPerUnit: number;
  /** Undefined only for an unlimited rule. */
  readonly unit: Unit | undefined;
  /** Undefined for an unlimited rule and for `requests_per_unit: 0` (every hit is over the limit). */
  readonly policy: CompiledPolicy | undefined;
  /** `fail_mode`: `closed` (the call fails, so Envoy's `failure_mode_deny` decides), `open`, `local`. */
  readonly failMode: 'closed' | 'open' | 'local';
}

/** One level of the descriptor tree. */
export interface RuleNode {
  /** Children by `key` or `key_value` (the reference's map key). */
  readonly children: Map<string, RuleNode>;
  /** Children whose value holds `*`, in config order, split on `*`. */
  readonly wildcards: { readonly key: string; readonly parts: readonly string[] }[];
  readonly rule: Rule | undefined;
  /** `share_threshold`: every value matching this wildcard shares one counter. */
  readonly shareThreshold: boolean;
}

/** A whole config: every domain's tree, plus the files it came from. */
export interface RateLimitConfig {
  readonly domains: ReadonlyMap<string, RuleNode>;
  /** Every rule, for metrics reported at 0 before their first hit. */
  readonly rules: readonly Rule[];
  readonly files: readonly string[];
}

/** A config file Sluice cannot load: names the file, and the domain and descriptor when known. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly file: string,
    readonly domain: string | undefined,
    readonly descriptor: string | undefined,
    readonly problem: string,
  ) {
    const where = [
      file,
      domain === undefined ? undefined : `domain "${domain}"`,
      descriptor === undefined ? undefined : `descriptor "${descriptor}"`,
    ].filter((part) => part !== undefined);
    super(`${where.join(', ')}: ${problem}`);
  }
}
