/**
 * The example-app contract's overload routes on every app (one node each on one real Redis):
 * `GET /concurrent?ms=N` (3 in flight per identity, a client abort frees its slot once the handler is done) and
 * `GET /queued` (waits for its turn, none early, at most 50 ms late; past 1000 ms a 429 at once;
 * a client abort gives the turn back). Every adapter passes the request's abort signal and
 * releases on its own end-of-response signal.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, test } from 'vitest';
import { type AppNode, EXAMPLE_APPS, startApps, stopApps } from '../support/apps.js';
import {
  expectAbortFreesSlot,
  expectAbortGivesTurnBack,
  expectConcurrentBadMs,
  expectConcurrentLimit,
  expectQueuedTurns,
} from '../support/overload-routes.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { closeAgents } from './client.js';

let redis: RedisProcess;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  closeAgents();
  await redis?.stop();
});

const apiKey = () => `overload-${randomUUID()}`;

describe.each(EXAMPLE_APPS)('$name example app on one Redis: /concurrent and /queued', (spec) => {
  let node: AppNode;
  const nodeFor = () => node;
  beforeAll(async () => {
    [node] = (await startApps([spec.name], {
      REDIS_URL: redis.url,
      SLUICE_PREFIX: `it-overload-${spec.name}-${randomUUID().slice(0, 8)}`,
      // A deadline for a machine shared by many processes (see example-apps.test.ts).
      SLUICE_TIMEOUT_MS: '1000',
    })) as [AppNode];
  });
  afterAll(async () => {
    await stopApps(node === undefined ? [] : [node]);
  });

  test('/concurrent: 3 in flight admitted, the 4th 429 at once with Retry-After and qu="concurrent-requests"; once they end, 3 new ones at once', async () => {
    await expectConcurrentLimit(nodeFor, apiKey());
  });

  test('/concurrent?ms=5001: 400 naming ms', async () => {
    await expectConcurrentBadMs(nodeFor, apiKey());
  });

  test('/concurrent: a client abort mid-request frees its slot once the handler is done, not before (no leaked slot)', async () => {
    await expectAbortFreesSlot(nodeFor, apiKey());
  });

  test('/queued: beyond the burst, admitted at their turns (not early, at most 50 ms late); past 1000 ms, 429 at once', async () => {
    await expectQueuedTurns(nodeFor, apiKey());
  });

  test('/queued: clients that go away while waiting give their turns back', async () => {
    await expectAbortGivesTurnBack(nodeFor, apiKey());
  });
});
