/** A policy's `quota` (regional quotas): validated at construction, and the rule of one limiter's policies. */
import type { FailMode } from '../model/fail-mode.js';
import type { CompiledQuota } from '../model/quota.js';
import type { CompiledPolicy } from '../types.js';
import { PolicyError } from './errors.js';
import { checkFields, plainObject } from './sub-options.js';

const QUOTA_FIELDS = ['service', 'bucket'];

/** The policy fields a quota policy cannot have: each decides admission another way. */
const EXCLUSIVE = ['lease', 'local', 'ban', 'maxWaitMs'] as const;

/**
 * Validates a policy's `quota`; undefined for none.
 *
 * @param input the policy's `quota` as written
 * @param p the policy as written (fields a quota excludes), its fail mode and algorithm
 * @throws PolicyError naming the field (`quota`, `quota.service`, `quota.bucket`) and the value
 */
export function compileQuota(
  input: unknown,
  p: Readonly<Record<string, unknown>> & { readonly failMode: FailMode; readonly algorithm: string },
  policy: string,
): CompiledQuota | undefined {
  if (input === undefined) return undefined;
  if (!plainObject(input)) {
    throw new PolicyError(
      'quota',
      input,
      "must be an object such as { service, bucket: { api: 'search' } }",
      policy,
    );
  }
  checkFields(input, QUOTA_FIELDS, 'quota', policy);
  const { service, bucket } = input;
  if (!plainObject(service) || typeof (service as { bucket?: unknown }).bucket !== 'function') {
    throw new PolicyError(
      'quota.service',
      service,
      'must be a quota service with bucket(id) (e.g. new QuotaClient(...) from @sluice/server)',
      policy,
    );
  }
  if (!plainObject(bucket) || Object.keys(bucket).length === 0) {
    throw new PolicyError(
      'quota.bucket',
      bucket,
      "must be an object of at least one pair, such as { api: 'search' }",
      policy,
    );
  }
  for (const [key, value] of Object.entries(bucket)) {
    if (key === '' || typeof value !== 'string' || value === '') {
      throw new PolicyError(`quota.bucket.${key}`, value, 'must be a non-empty string (keys too)', policy);
    }
  }
  for (const field of EXCLUSIVE) {
    if (p[field] !== undefined) {
      throw new PolicyError(
        field,
        p[field],
        'cannot be combined with "quota" (the quota decides admission)',
        policy,
      );
    }
  }
  if (p.failMode === 'lease' || p.algorithm === 'concurrency') {
    const field = p.failMode === 'lease' ? 'failMode' : 'algorithm';
    throw new PolicyError(field, p[field], 'cannot be combined with "quota"', policy);
  }
  return Object.freeze({
    service: service as unknown as CompiledQuota['service'],
    bucket: Object.freeze({ ...(bucket as Record<string, string>) }),
  });
}

/**
 * One limiter's policies are all quota policies or none: a quota policy is decided in-process from
 * its share, with no store call, which cannot be one all-or-nothing call with store policies.
 *
 * @throws PolicyError naming the first quota policy when some but not all have a quota
 */
export function refuseQuotaMix(policies: readonly CompiledPolicy[]): void {
  const quota = policies.filter((p) => p.quota !== undefined);
  if (quota.length === 0 || quota.length === policies.length) return;
  const first = quota[0] as CompiledPolicy;
  throw new PolicyError(
    'quota',
    first.quota?.bucket,
    'must be on every policy of its limiter or none (give quota policies a limiter, or a middleware, of their own)',
    first.name,
  );
}
