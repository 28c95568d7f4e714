/** Telling a promise-like answer of an app's function (sync or async options) from a value. */

/** True when `value` has a callable `then`: an app's function answered asynchronously. */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
