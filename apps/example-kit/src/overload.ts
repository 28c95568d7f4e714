/**
 * The overload routes of the example-app contract: `GET /concurrent?ms=N` (a concurrency limit:
 * the handler holds its slot for N ms) and `GET /queued` (a request over the rate waits its turn).
 */

/** Most milliseconds one `/concurrent` request may ask its handler to wait. */
export const CONCURRENT_MAX_MS = 5000;

/** The `ms` query value as milliseconds: a whole number from 0 to 5000, else undefined. */
export function parseHoldMs(value: string | undefined | null): number | undefined {
  if (value === undefined || value === null || !/^\d{1,4}$/.test(value)) return undefined;
  const holdMs = Number(value);
  return holdMs <= CONCURRENT_MAX_MS ? holdMs : undefined;
}

/**
 * The answer of `/concurrent`: after waiting `ms` milliseconds, `{"ok":true}`; at once, 400
 * naming the parameter when `ms` is not a whole number from 0 to 5000.
 */
export async function concurrentReply(
  value: string | undefined | null,
): Promise<{ status: 200 | 400; body: object }> {
  const holdMs = parseHoldMs(value);
  if (holdMs === undefined) {
    return {
      status: 400,
      body: {
        ok: false,
        error: `"ms" must be a whole number from 0 to ${CONCURRENT_MAX_MS}, got ${String(value)}`,
      },
    };
  }
  await delay(holdMs);
  return { status: 200, body: { ok: true } };
}

/** Resolves after `ms` milliseconds (one timer; a Web runtime has no `node:timers/promises`). */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
