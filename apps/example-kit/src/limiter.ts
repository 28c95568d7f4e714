/** The limiter, metrics and deny list an example app builds from its options. */
import {
  createDenyList,
  createLimiter,
  createMetrics,
  type DenyList,
  type Limiter,
  type SluiceMetrics,
} from '@sluice/core';
import type { ExampleAppOptions } from './app-env.js';
import { POLICIES } from './policies.js';

/** What `exampleLimiter` builds. */
export interface ExampleLimiter {
  /** Every policy of the contract, on the options' store, prefix and deadline. */
  readonly limiter: Limiter;
  /** Prometheus metrics of the limiter's decisions, by policy and outcome (`/metrics`). */
  readonly metrics: SluiceMetrics;
  /** One list for every route; `denyList.replace(...)` would change it for all of them at once. */
  readonly denyList: DenyList;
}

/** The limiter of the contract's policies, its metrics and the deny list, from an app's options. */
export function exampleLimiter(options: ExampleAppOptions): ExampleLimiter {
  const limiter = createLimiter({
    policies: POLICIES,
    store: options.store,
    prefix: options.prefix,
    timeoutMs: options.timeoutMs,
  });
  const metrics = createMetrics({ limiter, policies: POLICIES.map((policy) => policy.name) });
  return { limiter, metrics, denyList: createDenyList(options.denyList) };
}
