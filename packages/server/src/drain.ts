/** Graceful stops with a bound: the calls in flight get `graceMs` to finish, then they are cut. */

/**
 * Starts `graceful(done)` and resolves when it calls `done`, or after `graceMs` once `force()`
 * has run, whichever comes first.
 */
export function drainWithin(
  graceMs: number,
  graceful: (done: () => void) => void,
  force: () => void,
): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      force();
      resolve();
    }, graceMs);
    graceful(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
