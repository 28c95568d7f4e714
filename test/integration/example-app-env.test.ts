/**
 * The example apps' environment: every app takes its store deadline from SLUICE_TIMEOUT_MS
 * (design.md's example-app contract) and refuses a bad value at start, naming the variable.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EXAMPLE_APPS, exampleApp, startApp, stopApps } from '../support/apps.js';
import { EXPECTED } from '../support/expected.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { closeAgents, json, request } from './client.js';

/** Ten times core's default of 100 ms: an app that ignores the variable answers far sooner. */
const TIMEOUT_MS = 1000;

let redis: RedisProcess;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  closeAgents();
  await redis?.stop();
});

describe.each(EXAMPLE_APPS)('$name example app and SLUICE_TIMEOUT_MS', (spec) => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy({ port: redis.port });
  });
  afterAll(async () => {
    await proxy?.close();
  });

  test('a Redis that never answers: /strict answers 503 once the deadline of SLUICE_TIMEOUT_MS has passed, not before', async () => {
    const node = await startApp(exampleApp(spec.name), {
      REDIS_URL: proxy.url,
      SLUICE_PREFIX: `env-${randomUUID().slice(0, 8)}`,
      SLUICE_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    try {
      expect((await request(`${node.url}/strict`)).status).toBe(200);
      proxy.setMode('blackhole');
      const strict = await request(`${node.url}/strict`);
      expect(strict.status, strict.text).toBe(503);
      expect(json(strict)).toEqual(EXPECTED.unavailable());
      // A lower bound: the deadline cannot pass sooner, however loaded the machine.
      expect(strict.elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
    } finally {
      proxy.setMode('reset');
      await stopApps([node]);
      proxy.setMode('pass');
    }
  });

  test('a bad SLUICE_TIMEOUT_MS stops the app at start with a message naming it', async () => {
    const start = startApp(exampleApp(spec.name), { SLUICE_TIMEOUT_MS: 'soon' });
    await expect(start).rejects.toThrow(
      /SLUICE_TIMEOUT_MS must be a positive number of milliseconds.*, got soon/,
    );
  });

  // Number() reads these as 16 and a billion: a hexadecimal or exponent spelling is refused, and so is
  // a deadline past a minute.
  test.each(['0x10', '1e9', '120000'])('SLUICE_TIMEOUT_MS=%s stops the app at start', async (value) => {
    const start = startApp(exampleApp(spec.name), { SLUICE_TIMEOUT_MS: value });
    await expect(start).rejects.toThrow(
      new RegExp(
        `SLUICE_TIMEOUT_MS must be a positive number of milliseconds \\(decimal digits, at most 60000\\), got ${value}`,
      ),
    );
  });
});
