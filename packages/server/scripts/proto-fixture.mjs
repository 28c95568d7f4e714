// Writes src/upstream-protos.fixture.json: every message, field (number, type, label) and enum
// value of the upstream Envoy protos the server ships a trimmed copy of, read from a checkout of
// envoyproxy/data-plane-api. Usage: node scripts/proto-fixture.mjs <data-plane-api checkout> <commit>
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const [repo, commit] = process.argv.slice(2);
const FILES = [
  'envoy/service/ratelimit/v3/rls.proto',
  'envoy/extensions/common/ratelimit/v3/ratelimit.proto',
  'envoy/type/v3/ratelimit_unit.proto',
  'envoy/config/core/v3/base.proto',
  'envoy/service/rate_limit_quota/v3/rlqs.proto',
  'envoy/type/v3/ratelimit_strategy.proto',
  'envoy/type/v3/token_bucket.proto',
];
const WANTED = new Set([
  'envoy.service.ratelimit.v3.RateLimitRequest',
  'envoy.service.ratelimit.v3.RateLimitResponse',
  'envoy.service.ratelimit.v3.RateLimitResponse.RateLimit',
  'envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit',
  'envoy.service.ratelimit.v3.RateLimitResponse.Code',
  'envoy.service.ratelimit.v3.RateLimitResponse.Quota',
  'envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus',
  'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor',
  'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry',
  'envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride',
  'envoy.type.v3.RateLimitUnit',
  'envoy.config.core.v3.HeaderValue',
  'envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports',
  'envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports.BucketQuotaUsage',
  'envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse',
  'envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction',
  'envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction.QuotaAssignmentAction',
  'envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction.AbandonAction',
  'envoy.service.rate_limit_quota.v3.BucketId',
  'envoy.type.v3.RateLimitStrategy',
  'envoy.type.v3.RateLimitStrategy.BlanketRule',
  'envoy.type.v3.RateLimitStrategy.RequestsPerTimeUnit',
  'envoy.type.v3.TokenBucket',
]);

const out = { source: `envoyproxy/data-plane-api@${commit}`, types: {} };
for (const file of FILES) {
  const text = execFileSync('git', ['-C', repo, 'show', `${commit}:${file}`], { encoding: 'utf8' })
    .replace(/\/\/.*$/gm, '')
    .replace(/\[[^\]]*\]/gs, '');
  const pkg = /^package\s+([\w.]+);/m.exec(text)[1];
  const scope = [];
  for (const raw of text.split(/(?<=[{};])/)) {
    const part = raw.trim();
    const open = /^(message|enum|oneof)\s+(\w+)\s*\{$/.exec(part.replace(/\s+/g, ' '));
    if (open) {
      scope.push({ kind: open[1], name: open[2] });
      continue;
    }
    if (part.endsWith('}') && !part.includes('=')) {
      scope.pop();
      continue;
    }
    const named = scope.filter((s) => s.kind !== 'oneof');
    if (named.length === 0) continue;
    const full = `${pkg}.${named.map((s) => s.name).join('.')}`;
    if (!WANTED.has(full)) continue;
    const field = /^(repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;$/.exec(part.replace(/\s+/g, ' '));
    // A map field (a repeated map-entry message once compiled), its type written `map<K,V>`.
    const map = /^map\s*<\s*(\w+)\s*,\s*(\w+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;$/.exec(part.replace(/\s+/g, ' '));
    const value = /^(\w+)\s*=\s*(\d+)\s*;$/.exec(part.replace(/\s+/g, ' '));
    out.types[full] ??= { kind: named.at(-1).kind, members: {} };
    const entry = out.types[full];
    if (entry.kind === 'message' && map) {
      entry.members[map[3]] = { number: Number(map[4]), type: `map<${map[1]},${map[2]}>`, repeated: true };
    } else if (entry.kind === 'message' && field) {
      entry.members[field[3]] = { number: Number(field[4]), type: field[2], repeated: Boolean(field[1]) };
    } else if (entry.kind === 'enum' && value) {
      entry.members[value[1]] = Number(value[2]);
    }
  }
}
writeFileSync(
  new URL('../src/upstream-protos.fixture.json', import.meta.url),
  `${JSON.stringify(out, null, 2)}\n`,
);
