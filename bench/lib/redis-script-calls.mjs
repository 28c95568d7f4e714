/** Script calls Redis has run so far and its time in them (INFO commandstats: EVALSHA + EVAL, the `_ro` forms too). */

/**
 * Script calls (`evalsha`, `eval`, `evalsha_ro`, `eval_ro`) Redis has run since it started, and the
 * microseconds it spent in them, from `INFO commandstats`; the difference of two readings counts a run.
 * @param {import('ioredis').Redis} redis an admin connection (its own INFO calls are not scripts)
 */
export async function redisScriptStats(redis) {
  const info = await redis.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval|evalsha_ro|eval_ro):calls=(\d+),usec=(\d+)/gm)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

/** The number of script calls Redis has run since it started (see {@link redisScriptStats}). */
export async function redisScriptCalls(redis) {
  return (await redisScriptStats(redis)).calls;
}

/** How many of a run's answers were 2xx, from a `{ status: count }` record. */
export function count2xx(byStatus) {
  let n = 0;
  for (const [status, count] of Object.entries(byStatus)) {
    if (Number(status) >= 200 && Number(status) < 300) n += count;
  }
  return n;
}
