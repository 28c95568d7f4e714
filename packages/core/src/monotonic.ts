/** A monotonic clock in ms where there is one (every modern runtime), else the wall clock. Web-standard. */
export const monotonicNow = (): number => globalThis.performance?.now() ?? Date.now();

/**
 * The longest delay a timer is armed with as it is, in ms (2^31 - 1): a longer one fires at once
 * (Node warns and fires it after 1 ms).
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * The delay to arm a timer with when `restMs` are left: whole ms, at least 0, at most
 * {@link MAX_TIMER_DELAY_MS}. A timer due later fires before it is due: its callback reads the
 * clock and arms it again for the rest, so a long sleep goes in steps.
 */
export function timerDelay(restMs: number): number {
  return Math.min(MAX_TIMER_DELAY_MS, Math.max(0, Math.ceil(restMs)));
}
