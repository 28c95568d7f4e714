/**
 * 4 OS processes on one real Redis: a concurrency limit holds at every instant, waiting
 * requests are admitted at their turns and never beyond the rate, and the slots of a SIGKILLed
 * process come back when their lease ends (overload-fleet.ts).
 */
import { startRedis } from '../support/redis-server.js';
import { describeFleet } from './overload-fleet.js';

describeFleet('4 processes on one Redis', async () => {
  const redis = await startRedis();
  return { target: redis.url, stop: () => redis.stop() };
});
