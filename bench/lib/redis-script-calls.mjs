/** Script calls Redis has run so far (INFO commandstats: EVALSHA + EVAL, the `_ro` forms too). */

/**
 * The number of script calls (`evalsha`, `eval`, `evalsha_ro`, `eval_ro`) Redis has run since it
 * started, from `INFO commandstats`; the difference of two readings counts a run's calls.
 * @param {import('ioredis').Redis} redis an admin connection (its own INFO calls are not scripts)
 */
export async function redisScriptCalls(redis) {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval|evalsha_ro|eval_ro):calls=(\d+)/gm)) {
    calls += Number(m[1]);
  }
  return calls;
}

/** How many of a run's answers were 2xx, from a `{ status: count }` record. */
export function count2xx(byStatus) {
  let n = 0;
  for (const [status, count] of Object.entries(byStatus)) {
    if (Number(status) >= 200 && Number(status) < 300) n += count;
  }
  return n;
}
