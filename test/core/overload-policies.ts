/** The overload workers' policies (overload-worker.ts), shared with the suites that drive them. */
import type { PolicyInput } from '../../packages/core/src/types.js';

/** The slot lease of the workers' concurrency policy: short, so a SIGKILLed holder's slots come back soon. */
export const WORKER_LEASE_MS = 1000;

/** The example apps' overload policies, with a 1 s slot lease. */
export const OVERLOAD_POLICIES: PolicyInput[] = [
  { name: 'in-flight', algorithm: 'concurrency', limit: 3, leaseMs: WORKER_LEASE_MS },
  { name: 'queued', algorithm: 'token-bucket', burst: 5, rate: '10/s', maxWaitMs: 1000 },
];
