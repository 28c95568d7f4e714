/** A circuit breaker in front of the store: after repeated failures, stop calling it for a cool-down. */
import type { Clock } from '../types.js';

/** Where the breaker stands. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/** What the breaker allows for one call. */
export type BreakerPermit = 'call' | 'probe' | 'reject';

/**
 * Counts consecutive store failures. At `failureThreshold` it opens: calls are rejected without
 * touching the store until `cooldownMs` has passed, then ONE probe call goes through (half-open).
 * A success anywhere closes it; a failed probe opens it for another cool-down.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedAtMs: number | undefined;
  private probing = false;

  /**
   * @param failureThreshold consecutive failures that open the breaker (>= 1)
   * @param cooldownMs how long an open breaker rejects calls before a probe
   * @param clock time source
   */
  constructor(
    private readonly failureThreshold: number,
    private readonly cooldownMs: number,
    private readonly clock: Clock,
  ) {}

  /** The current state (for health checks and tests). */
  get state(): BreakerState {
    if (this.openedAtMs === undefined) return 'closed';
    return this.probing || this.clock() - this.openedAtMs >= this.cooldownMs ? 'half-open' : 'open';
  }

  /** Milliseconds until an open breaker lets a probe through; 0 when closed or half-open. */
  get remainingCooldownMs(): number {
    if (this.openedAtMs === undefined) return 0;
    return Math.max(0, this.openedAtMs + this.cooldownMs - this.clock());
  }

  /** Asks to call the store. `reject` means: treat as a failure without calling. */
  permit(): BreakerPermit {
    if (this.openedAtMs === undefined) return 'call';
    if (this.probing) return 'reject';
    const now = this.clock();
    // A clock that went backwards restarts the cool-down rather than skipping it.
    if (now < this.openedAtMs) this.openedAtMs = now;
    if (now - this.openedAtMs < this.cooldownMs) return 'reject';
    this.probing = true;
    return 'probe';
  }

  /** The store answered. */
  success(): void {
    this.failures = 0;
    this.openedAtMs = undefined;
    this.probing = false;
  }

  /** The store failed (error or deadline). `permit` is what `permit()` returned for this call. */
  failure(permit: BreakerPermit): void {
    this.failures++;
    if (permit === 'probe') {
      this.probing = false;
      this.openedAtMs = this.clock();
    } else if (this.openedAtMs === undefined && this.failures >= this.failureThreshold) {
      this.openedAtMs = this.clock();
    }
  }
}
