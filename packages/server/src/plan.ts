/**
 * What a request asks: each descriptor's rule (after `replaces` and `unlimited`), its hits and its
 * storage key. Built from the config snapshot taken when the call arrived.
 */
import { definePolicy } from '@sluice/core';
import { encodeKeyComponent, identityTag } from '@sluice/core/adapter';
import { findRule } from './config/match.js';
import { type RateLimitConfig, type Rule, UNIT_MS, type Unit } from './config/types.js';
import { type RlsDescriptor, type RlsRequest, RlsRequestError } from './rls-types.js';

/** One descriptor of the request, planned. */
export interface PlannedDescriptor {
  /** The rule that applies; undefined when none does (or it was replaced): answered OK. */
  readonly rule: Rule | undefined;
  /** The matched rule is `unlimited`: answered OK with the largest remaining. */
  readonly unlimited: boolean;
  /** Units this descriptor charges; 0 looks without charging. */
  readonly hits: number;
  /** Storage key of its counter (set when `rule.policy` is). */
  readonly key: string;
}

/** Rules built for Envoy's per-descriptor limit overrides, by `<requests>/<unit>`. */
const overrides = new Map<string, Rule>();
const MAX_OVERRIDES = 1000;

/** A fixed-window rule for a descriptor's `limit` override, as the reference builds one. */
function overrideRule(domain: string, limit: NonNullable<RlsDescriptor['limit']>): Rule | undefined {
  const unit = limit.unit as Unit;
  if (!(unit in UNIT_MS)) return undefined;
  const id = `${limit.requests_per_unit}/${unit}`;
  const known = overrides.get(id);
  if (known !== undefined && known.domain === domain) return known;
  const rule: Rule = {
    id: 'override',
    domain,
    name: '',
    replaces: [],
    unlimited: false,
    shadow: false,
    requestsPerUnit: limit.requests_per_unit,
    unit,
    failMode: 'closed',
    policy:
      limit.requests_per_unit > 0
        ? definePolicy({
            name: 'override',
            algorithm: 'fixed-window',
            limit: limit.requests_per_unit,
            window: UNIT_MS[unit],
          })
        : undefined,
  };
  if (overrides.size >= MAX_OVERRIDES) overrides.clear();
  overrides.set(id, rule);
  return rule;
}

/** Hits of descriptor `d`: its own `hits_addend` when set (0 allowed), else max(1, the request's). */
function hitsOf(request: RlsRequest, d: RlsDescriptor): number {
  const own = d.hits_addend;
  if (own !== undefined && own !== null) return Number(own.value);
  return Math.max(1, request.hits_addend);
}

/**
 * The storage key of a counter: `<prefix>:{app<domain>}:<entries>`, and for an Envoy limit override
 * its limit as well (`<requests>/<unit>`), so an override never shares a counter with the config's
 * rule on the same entries nor with an override of another limit. Every counter of one domain
 * shares the hash tag, so all descriptors of one request are decided by one script call, also on
 * Redis Cluster; entries are encoded so that no value can choose the slot or meet another key.
 */
export function counterKey(
  prefix: string,
  domain: string,
  entries: readonly { key: string; value: string }[],
  override?: { readonly requests_per_unit: number; readonly unit: string },
): string {
  const flat: string[] = [];
  for (const entry of entries) flat.push(entry.key, entry.value);
  // An odd-length list: never the list of entries alone.
  if (override !== undefined) flat.push(`${override.requests_per_unit}/${override.unit}`);
  return `${identityTag(prefix, domain)}:${encodeKeyComponent(JSON.stringify(flat))}`;
}

/**
 * True when `d` is over a `requests_per_unit: 0` rule: every hit is over that limit (0 + hits > 0,
 * as the reference compares), and a look (0 hits) is within it.
 */
export function overZeroLimit(d: PlannedDescriptor): boolean {
  return d.rule !== undefined && d.rule.policy === undefined && d.hits > 0;
}

/**
 * Plans every descriptor of `request` under `config`. Throws `RlsRequestError` for an empty
 * domain or descriptor list (the reference's service errors).
 */
export function planRequest(
  config: RateLimitConfig,
  request: RlsRequest,
  prefix: string,
): PlannedDescriptor[] {
  if (request.domain === '') throw new RlsRequestError('rate limit domain must not be empty');
  if (request.descriptors.length === 0)
    throw new RlsRequestError('rate limit descriptor list must not be empty');
  const replaced = new Set<string>();
  // An unknown domain limits nothing, limit overrides included (the reference's GetLimit).
  const known = config.domains.has(request.domain);
  const matches = request.descriptors.map((d) => {
    if (!known) return undefined;
    if (d.limit !== undefined && d.limit !== null) {
      const rule = overrideRule(request.domain, d.limit);
      return rule === undefined ? undefined : { rule, counterEntries: d.entries, override: d.limit };
    }
    const match = findRule(config, request.domain, d.entries);
    for (const name of match?.rule.replaces ?? []) replaced.add(name);
    return match;
  });
  return request.descriptors.map((d, i) => {
    const match = matches[i];
    const hits = hitsOf(request, d);
    if (match === undefined) return { rule: undefined, unlimited: false, hits, key: '' };
    if (match.rule.unlimited) return { rule: undefined, unlimited: true, hits, key: '' };
    if (match.rule.name !== '' && replaced.has(match.rule.name))
      return { rule: undefined, unlimited: false, hits, key: '' };
    return {
      rule: match.rule,
      unlimited: false,
      hits,
      key: counterKey(
        prefix,
        request.domain,
        match.counterEntries,
        'override' in match ? match.override : undefined,
      ),
    };
  });
}
