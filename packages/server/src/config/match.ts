/** Finds the rule of one descriptor, as envoyproxy/ratelimit's GetLimit does (config_impl.go). */
import type { RateLimitConfig, Rule, RuleNode } from './types.js';

/** One entry of a request descriptor. */
export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** The rule a descriptor matched and the entries its counter is kept under. */
export interface RuleMatch {
  readonly rule: Rule;
  /**
   * The descriptor's entries as the counter sees them: the request's values, except that an entry
   * matched by a `share_threshold` wildcard carries the wildcard pattern, so all its matches share.
   */
  readonly counterEntries: readonly DescriptorEntry[];
}

/**
 * True when `value` matches a wildcard pattern split on `*` (each `*` matches zero or more
 * characters), the reference's wildcardMatch.
 */
export function wildcardMatch(parts: readonly string[], value: string): boolean {
  if (parts.length === 1) return parts[0] === value;
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  if (!value.startsWith(first) || !value.endsWith(last)) return false;
  if (value.length < parts.reduce((sum, part) => sum + part.length, 0)) return false;
  let rest = value.slice(first.length, value.length - last.length);
  for (const part of parts.slice(1, -1)) {
    const at = rest.indexOf(part);
    if (at < 0) return false;
    rest = rest.slice(at + part.length);
  }
  return true;
}

function wildcardChild(
  parent: RuleNode,
  children: ReadonlyMap<string, RuleNode>,
  finalKey: string,
): { node: RuleNode; pattern: string } | undefined {
  for (const wildcard of parent.wildcards) {
    if (!wildcardMatch(wildcard.parts, finalKey)) continue;
    const node = children.get(wildcard.key);
    if (node !== undefined) return { node, pattern: wildcard.key };
  }
  return undefined;
}

/**
 * The rule for `entries` in `domain`, or undefined when none applies: the walk goes down the tree
 * by `key_value`, then a wildcard, then `key` alone; a rule applies only when it sits at the depth
 * of the descriptor's last entry.
 */
export function findRule(
  config: RateLimitConfig,
  domain: string,
  entries: readonly DescriptorEntry[],
): RuleMatch | undefined {
  const root = config.domains.get(domain);
  if (root === undefined) return undefined;
  let parent = root;
  let children = root.children;
  let rule: Rule | undefined;
  const shared = new Map<number, string>();
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as DescriptorEntry;
    const finalKey = `${entry.key}_${entry.value}`;
    let next = children.get(finalKey);
    if (next === undefined && parent.wildcards.length > 0) {
      const found = wildcardChild(parent, children, finalKey);
      if (found !== undefined) {
        next = found.node;
        if (next.shareThreshold) shared.set(i, found.pattern.slice(entry.key.length + 1));
      }
    }
    next ??= children.get(entry.key);
    if (next?.rule !== undefined && i === entries.length - 1) rule = next.rule;
    if (next === undefined || next.children.size === 0) break;
    children = next.children;
    parent = next;
  }
  if (rule === undefined) return undefined;
  const counterEntries =
    shared.size === 0 ? entries : entries.map((e, i) => ({ key: e.key, value: shared.get(i) ?? e.value }));
  return { rule, counterEntries };
}
