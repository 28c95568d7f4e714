/** A deadline on every store call. */

/** The store did not answer within the limiter's `timeoutMs`. */
export class StoreTimeoutError extends Error {
  /** The deadline that passed. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`store did not answer within ${timeoutMs} ms`);
    this.name = 'StoreTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Runs `call` and settles with its result, or rejects with `StoreTimeoutError` after `timeoutMs`.
 * A late answer is dropped (and a late failure swallowed), never surfaced.
 */
export function withDeadline<T>(call: () => Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreTimeoutError(timeoutMs)), timeoutMs);
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (error) {
      clearTimeout(timer);
      reject(error);
      return;
    }
    Promise.resolve(pending).then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
