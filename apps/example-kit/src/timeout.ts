/** The store deadline the example apps take from `SLUICE_TIMEOUT_MS`. */

/** The longest store deadline the example apps take: past a minute it is no deadline for a request. */
export const MAX_TIMEOUT_MS = 60_000;

/**
 * `SLUICE_TIMEOUT_MS`: the store deadline in milliseconds, or undefined (core's default)
 * when unset or empty. Throws, naming the variable and the value, unless it is written as a
 * decimal number of milliseconds (`250`, `12.5`; not `0x10` or `1e3`) above 0 and at most
 * `MAX_TIMEOUT_MS`.
 */
export function timeoutMsFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.SLUICE_TIMEOUT_MS?.trim();
  if (raw === undefined || raw === '') return undefined;
  const timeoutMs = /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new Error(
      `SLUICE_TIMEOUT_MS must be a positive number of milliseconds (decimal digits, at most ${MAX_TIMEOUT_MS}), got ${raw}`,
    );
  }
  return timeoutMs;
}
