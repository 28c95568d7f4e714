/** The one test of a positive whole count (a limit, a burst, lease units) that policy fields share. */

/** True for a safe integer above 0. */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}
