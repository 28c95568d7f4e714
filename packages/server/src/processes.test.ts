/**
 * The real `sluice-server` bin as OS processes on a real redis-server: two processes sharing one
 * limit exactly, config reload with a good and a bad file, a bad file at startup, Redis stopped
 * and back, SIGTERM in the middle of traffic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  descriptor,
  inOneMinuteWindow,
  type RuntimeDir,
  rlsClient,
  runtimeDir,
  type ServerProcess,
  serviceEnv,
  spawnServer,
} from './harness.test-support.js';

const LIMITS = `
domain: shared
descriptors:
  - key: tenant
    rate_limit: { unit: minute, requests_per_unit: 4 }
  - key: strict
    rate_limit: { unit: minute, requests_per_unit: 1000 }
  - key: lenient
    rate_limit: { unit: minute, requests_per_unit: 1000, fail_mode: open }
  - key: local
    rate_limit: { unit: minute, requests_per_unit: 2, fail_mode: local }
  - key: bulk
    rate_limit: { unit: hour, requests_per_unit: 100000 }
`;

let redis: RedisProcess;
const running: ServerProcess[] = [];
const dirs: RuntimeDir[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await redis?.stop();
  for (const dir of dirs) dir.remove();
});

async function spawn(dir: RuntimeDir, extra: Record<string, string> = {}): Promise<ServerProcess> {
  const server = await spawnServer(serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, ...extra }));
  running.push(server);
  await inOneMinuteWindow();
  return server;
}

function dirWith(files: Record<string, string>): RuntimeDir {
  const dir = runtimeDir(files);
  dirs.push(dir);
  return dir;
}

const ask = (port: number, ...pairs: string[]) =>
  rlsClient(port).shouldRateLimit({ domain: 'shared', descriptors: [descriptor(...pairs)] });

describe('sluice-server processes', () => {
  it('two processes share one limit exactly: 20 concurrent calls, limit 4, exactly 4 OK', async () => {
    const dir = dirWith({ 'shared.yaml': LIMITS });
    // The deadline is generous: on a busy machine a first call (connection, script load) can be slow,
    // and this test is about exactness, not latency.
    const env = { CACHE_KEY_PREFIX: 'two:', SLUICE_TIMEOUT_MS: '5000' };
    const [a, b] = await Promise.all([spawn(dir, env), spawn(dir, env)]);
    const clients = [rlsClient(a?.grpcPort ?? 0), rlsClient(b?.grpcPort ?? 0)];
    for (const client of clients) {
      await client.shouldRateLimit({ domain: 'shared', descriptors: [descriptor('strict=warm')] });
    }
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        clients[i % 2]?.shouldRateLimit({ domain: 'shared', descriptors: [descriptor('tenant=t1')] }),
      ),
    );
    expect(replies.filter((r) => r?.overall_code === 'OK')).toHaveLength(4);
    expect(replies.filter((r) => r?.overall_code === 'OVER_LIMIT')).toHaveLength(16);
    for (const client of clients) client.close();
  });

  it('reload: a good file takes effect; a bad one is refused, logged and counted, the previous stays', async () => {
    const dir = dirWith({ 'shared.yaml': LIMITS });
    const server = await spawn(dir, { CACHE_KEY_PREFIX: 'reload:' });
    expect((await ask(server.grpcPort, 'tenant=r')).statuses[0]?.current_limit?.requests_per_unit).toBe(4);
    dir.write('shared.yaml', LIMITS.replace('requests_per_unit: 4', 'requests_per_unit: 7'));
    await server.waitFor(/config reloaded/);
    expect((await ask(server.grpcPort, 'tenant=r')).statuses[0]).toMatchObject({
      current_limit: { requests_per_unit: 7 },
      limit_remaining: 5,
    });
    dir.write('shared.yaml', LIMITS.replace('unit: minute', 'unit: fortnight'));
    await server.waitFor(/config reload refused/);
    expect(server.output()).toMatch(
      /shared\.yaml, domain "shared", descriptor "tenant": invalid rate limit unit 'fortnight'/,
    );
    expect((await ask(server.grpcPort, 'tenant=r')).statuses[0]).toMatchObject({
      current_limit: { requests_per_unit: 7 },
      limit_remaining: 4,
    });
    const metrics = await (await fetch(`http://127.0.0.1:${server.httpPort}/metrics`)).text();
    expect(metrics).toContain('ratelimit_service_config_load_error 1');
    expect(metrics).toContain('ratelimit_service_config_load_success 2');
  });

  it('a bad file at startup is fatal: exit 1 with the file, domain and descriptor', async () => {
    const dir = dirWith({
      'bad.yaml':
        'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: second, requests_per_unit: -3 }',
    });
    await expect(spawn(dir)).rejects.toThrow(
      /bad\.yaml, domain "d", descriptor "a": requests_per_unit must be an integer from 0 to 4294967295, got -3/,
    );
  });

  it('Redis stopped and back: closed rules fail fast (UNAVAILABLE), open admit, local decide in-process; health follows', async () => {
    const own = await startRedis();
    const dir = dirWith({ 'shared.yaml': LIMITS });
    const server = await spawn(dir, { REDIS_URL: `127.0.0.1:${own.port}`, SLUICE_TIMEOUT_MS: '500' });
    const health = () => fetch(`http://127.0.0.1:${server.httpPort}/healthcheck`).then((r) => r.status);
    expect((await ask(server.grpcPort, 'strict=s')).overall_code).toBe('OK');
    await own.stop();
    const started = Date.now();
    await expect(ask(server.grpcPort, 'strict=s')).rejects.toMatchObject({ code: 14 });
    expect(Date.now() - started).toBeLessThan(1500);
    expect((await ask(server.grpcPort, 'lenient=l')).overall_code).toBe('OK');
    const local = [];
    for (let i = 0; i < 3; i++) local.push((await ask(server.grpcPort, 'local=x')).overall_code);
    expect(local).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    expect(await health()).toBe(500);
    expect(await rlsClient(server.grpcPort).health()).toBe('NOT_SERVING');
    const back = await startRedis({ port: own.port });
    try {
      await server.waitFor(/./, 100);
      const deadline = Date.now() + 10_000;
      while ((await health()) !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await health()).toBe(200);
      expect(await rlsClient(server.grpcPort).health()).toBe('SERVING');
      expect((await ask(server.grpcPort, 'strict=s')).overall_code).toBe('OK');
    } finally {
      await back.stop();
    }
  });

  it('SIGTERM in the middle of traffic: every call is answered or refused, nothing charged is lost, exit 0', async () => {
    const dir = dirWith({ 'shared.yaml': LIMITS });
    // A generous store deadline: a call that missed it could be charged by a script still running
    // (an answer lost to the deadline, fail_mode's business); here every refusal is the shutdown's.
    const prefix = { CACHE_KEY_PREFIX: 'term:', SLUICE_TIMEOUT_MS: '10000' };
    const server = await spawn(dir, prefix);
    const client = rlsClient(server.grpcPort);
    const outcomes: string[] = [];
    const calls: Promise<void>[] = [];
    const fire = (): void => {
      calls.push(
        client.shouldRateLimit({ domain: 'shared', descriptors: [descriptor('bulk=term')] }).then(
          (reply) => void outcomes.push(reply.overall_code),
          (error: { code?: number; details?: string }) =>
            void outcomes.push(error.details?.includes('store') ? 'store error' : `error ${error.code}`),
        ),
      );
    };
    const timer = setInterval(() => {
      for (let i = 0; i < 3; i++) fire();
    }, 5);
    while (outcomes.filter((o) => o === 'OK').length < 20) await new Promise((r) => setTimeout(r, 10));
    const exit = server.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    clearInterval(timer);
    expect(await exit).toBe(0);
    await Promise.all(calls);
    client.close();
    const ok = outcomes.filter((o) => o === 'OK').length;
    expect(ok).toBeGreaterThan(0);
    expect([...new Set(outcomes)].filter((o) => o !== 'OK' && o !== 'error 14')).toEqual([]);
    // Every charge the store made was answered OK: a second process looks at the counter.
    const witness = await spawn(dir, prefix);
    const look = await rlsClient(witness.grpcPort).shouldRateLimit({
      domain: 'shared',
      descriptors: [{ ...descriptor('bulk=term'), hits_addend: { value: '0' } }],
    });
    expect(look.statuses[0]?.limit_remaining).toBe(100_000 - ok);
    expect(server.output()).toContain('stopped');
  });
});
