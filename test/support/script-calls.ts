/** Script calls a Redis ran, by its own count (INFO commandstats), for tests that count store calls. */
import type { Redis } from 'ioredis';

/** EVALSHA and EVAL calls `admin`'s Redis counted so far (since it started or its last RESETSTAT). */
export async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}
