/**
 * The settle routes of the example-app contract: `POST /generate?used=N` (reserve 100
 * `llm-tokens`, settle to the N used) and `POST /login?ok=1|0` (only failed logins count).
 */

/** Most units one `/generate` request may say it used. */
export const GENERATE_MAX_UNITS = 1000;

/** The `used` query value as units: a whole number from 0 to 1000, else undefined. */
export function parseUsed(value: string | undefined | null): number | undefined {
  if (value === undefined || value === null || !/^\d{1,4}$/.test(value)) return undefined;
  const units = Number(value);
  return units <= GENERATE_MAX_UNITS ? units : undefined;
}

/** The body of `/generate`: `{"ok":true,"used":N}`, or 400 when `used` is not 0 to 1000. */
export function generateReply(value: string | undefined | null): { status: 200 | 400; body: object } {
  const used = parseUsed(value);
  return used === undefined
    ? {
        status: 400,
        body: { ok: false, error: `"used" must be a whole number from 0 to ${GENERATE_MAX_UNITS}` },
      }
    : { status: 200, body: { ok: true, used } };
}

/**
 * The units a `/generate` request settles to: the `used` it was given (a request with a bad
 * `used` was answered 400 and keeps its reservation).
 */
export function generateUnits(value: string | undefined | null, reserved: number): number {
  return parseUsed(value) ?? reserved;
}

/** The body of `/login`: 200 `{"ok":true}` for `ok=1`, 401 `{"ok":false}` otherwise. */
export function loginReply(ok: string | undefined | null): { status: 200 | 401; body: object } {
  return ok === '1' ? { status: 200, body: { ok: true } } : { status: 401, body: { ok: false } };
}
