/** The store deadline the example apps take from `SLUICE_TIMEOUT_MS`. */

/**
 * `SLUICE_TIMEOUT_MS`: the store deadline in milliseconds, or undefined (core's default)
 * when unset or empty. Throws, naming the variable and the value, when it is not a
 * positive number.
 */
export function timeoutMsFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.SLUICE_TIMEOUT_MS?.trim();
  if (raw === undefined || raw === '') return undefined;
  const timeoutMs = Number(raw);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new Error(`SLUICE_TIMEOUT_MS must be a positive number of milliseconds, got ${raw}`);
  }
  return timeoutMs;
}
