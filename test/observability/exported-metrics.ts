/** The metric names Sluice exports: every family a limiter with a Redis store renders, histogram parts included. */
import { createLimiter, createMetrics, RedisStore } from '@sluice/core';

/** Every sample name (`sluice_decisions_total`, `sluice_store_duration_seconds_bucket`, ...). */
export function exportedMetricNames(): Set<string> {
  // A Redis store is only built here, never called: it gives the script families.
  const store = new RedisStore({
    client: {
      evalsha: () => Promise.reject(new Error('unused')),
      eval: () => Promise.reject(new Error('unused')),
    },
  });
  const limiter = createLimiter({ policies: [{ name: 'p', limit: 1, window: '1m' }], store });
  const metrics = createMetrics({ meter: false, limiter });
  // An in-process decision makes its family appear.
  metrics.record({
    policy: 'p',
    outcome: 'allowed',
    metricOutcomes: [{ policy: 'p', outcome: 'allowed' }],
    allowed: true,
    shadowed: false,
    source: 'lease',
    durationMs: 0,
  });
  const names = new Set<string>();
  for (const family of metrics.families()) {
    if (family.type === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${family.name}${suffix}`);
    } else names.add(family.name);
  }
  return names;
}

/** The metric names a PromQL expression reads (identifiers that are not functions, keywords or labels). */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // groupings
    .replace(/\[[^\]]*\]/g, ' ') // ranges
    .replace(/\boffset\s+\S+/g, ' ')
    .replace(/"[^"]*"/g, ' ')
    .replace(/\$\w+/g, ' ');
  const names: string[] = [];
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?/g)) {
    if (m[1] !== undefined) continue; // a function
    if (['and', 'or', 'unless', 'bool', 'inf', 'nan'].includes(m[0].toLowerCase())) continue;
    names.push(m[0]);
  }
  return names;
}
