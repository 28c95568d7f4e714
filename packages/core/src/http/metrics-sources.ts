/** `sluice_in_process_decisions_total{source}`: decisions made without a store call, by where they were made. */
import type { DecisionSource } from '../types.js';
import type { MetricFamily } from './metrics-families.js';

/** The sources of decisions made in-process: a lease, a policy's local stage, the deny cache, a regional quota. */
export const IN_PROCESS_SOURCES: readonly DecisionSource[] = Object.freeze([
  'lease',
  'local-stage',
  'deny-cache',
  'quota',
]);

/**
 * Counts decisions by in-process source. Rendered only once one was counted, so an app using none
 * of them exposes what it did before. The label is the source, nothing else.
 */
export class InProcessDecisionCounts {
  readonly #bySource = new Map<DecisionSource, number>();

  /** Counts one decision made at `source`, when that is an in-process source. */
  record(source: DecisionSource): void {
    if (source === 'store' || !IN_PROCESS_SOURCES.includes(source)) return;
    this.#bySource.set(source, (this.#bySource.get(source) ?? 0) + 1);
  }

  /** The family (none before the first count). */
  family(): MetricFamily | undefined {
    if (this.#bySource.size === 0) return undefined;
    const samples = [];
    for (const source of IN_PROCESS_SOURCES) {
      const n = this.#bySource.get(source);
      if (n !== undefined) samples.push({ labels: { source }, value: n });
    }
    return {
      name: 'sluice_in_process_decisions_total',
      help: 'Decisions made without a store call, by source (lease, local-stage, deny-cache, quota).',
      type: 'counter',
      samples,
    };
  }
}
