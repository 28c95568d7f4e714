/**
 * A load run from a client that is not Node: several Python processes on gRPC's C core, each on a
 * connection of its own, against the real bin with two workers on a real redis-server. Every call
 * is answered, the limit holds exactly, and the run reports calls per second.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  inOneMinuteWindow,
  type RuntimeDir,
  runtimeDir,
  type ServerProcess,
  serviceEnv,
  spawnServer,
} from './harness.test-support.js';
import { pythonLoad } from './python.test-support.js';

let redis: RedisProcess;
let dir: RuntimeDir;
let server: ServerProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = runtimeDir({
    'py.yaml':
      'domain: py\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: minute, requests_per_unit: 300 }\n',
  });
  server = await spawnServer(
    serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, SLUICE_WORKERS: '2', SLUICE_TIMEOUT_MS: '5000' }),
  );
});
afterAll(async () => {
  await server?.stop();
  await redis?.stop();
  dir?.remove();
});

describe('a Python load run (gRPC C core)', () => {
  it('4 processes x 150 calls, 8 in flight each, on 2 workers: all answered, exactly the limit admitted', async () => {
    // The whole run inside one minute window (it is bounded to 15 s of calls).
    await inOneMinuteWindow(30_000);
    const report = await pythonLoad(
      server.grpcPort,
      { domain: 'py', descriptors: [{ entries: [{ key: 'tenant', value: 'load' }] }] },
      { processes: 4, callsPerProcess: 150, inFlight: 8, maxSeconds: 15 },
    );
    console.log(
      `Python load run: ${report.calls} calls from ${report.processes} processes in ${report.seconds} s, ${report.callsPerSecond} calls/s`,
    );
    expect(report.calls).toBe(600);
    expect(report.codes).toEqual({ OK: 300, OVER_LIMIT: 300 });
    expect(report.callsPerSecond).toBeGreaterThan(0);
  });
});
